// The PD plan: every decision about one request's legs, made once, before any I/O, by pure
// functions (ARCHITECTURE decisions 1, 6, 11). planPd decides skip, relay, connector mode,
// transfer id, the prefill leg's tag and its sampling cap (prefill-cap.ts); planDecodeKv
// decides what decode gets once prefill has answered. Transports only encode the LegSpecs.
import type { LegSpec, TransportTraits } from "../core/leg-transport.js";
import type { KvInjection, SkipReason } from "../core/types.js";
import {
  NIXL_PREFILL_PARAMS_JSON,
  connectorMode,
  isMooncakeModern,
  mooncakeDecodeParamsJson,
  mooncakePrefillParamsJson,
  type ConnectorMode,
  type EngineKvMeta,
} from "./connector.js";
import { prefillCap } from "./prefill-cap.js";
import { prefillSkipReason, relayKvParams, type SkipPrefillInputs } from "./skip.js";

/** Bench/test-only overrides, honoured only when config.debug.allow_pd_overrides is on. */
export type PdOverride = "force-prefill" | "force-relay";

export interface PlanInputs {
  /** Sequences the request asks for: n, times the prompts of a batched completions request. */
  fanout: number;
  hasEncodeAssignments: boolean;
  /** The request carries multimodal inputs. */
  hasMmInputs: boolean;
  prefill: EngineKvMeta;
  decode: EngineKvMeta;
  traits: TransportTraits;
  override?: PdOverride;
  mintTransferId(): string;
  /** What the decider weighs besides fan-out: prompt length and queues (skip.ts). */
  decider?: Pick<SkipPrefillInputs, "promptTokens" | "decodeOnlyMaxPromptTokens" | "prefillWaiting" | "decodeWaiting" | "prefillQueueLimit" | "decodeQueueLimit">;
}

export interface PdPlan {
  mode: ConnectorMode;
  /** The handoff can go to decode (n <= 1, or forced). */
  relay: boolean;
  skip: boolean;
  skipReason?: SkipReason;
  transferId?: string;
  /** The prefill leg (id filled in per attempt); absent when skipped. */
  prefill?: Omit<LegSpec, "requestId">;
  decodeDpRank?: number;
  /** Pixels ride the prefill leg only; decode gets them back when it recomputes. */
  pixelsOnPrefillOnly: boolean;
}

export function planPd(i: PlanInputs): PdPlan {
  const mode = connectorMode(i.prefill);
  const relay = relayKvParams(i.fanout) || i.override === "force-relay";
  const transferId = isMooncakeModern(mode, relay) ? i.mintTransferId() : undefined;
  const hasMm = i.hasMmInputs && i.traits.pixelsOnPrefillOnly;
  const skipReason =
    i.override === undefined
      ? prefillSkipReason({
          ...i.decider,
          relayKvParams: relay,
          hasEncodeAssignments: i.hasEncodeAssignments,
          hasMmInputs: hasMm,
          decodeNeedsPrefillBootstrap: i.traits.typedBootstrap && mode.kind === "mooncake",
        })
      : undefined;
  const skip = skipReason !== undefined;
  const plan: PdPlan = { mode, relay, skip, pixelsOnPrefillOnly: hasMm };
  if (skipReason !== undefined) plan.skipReason = skipReason;
  if (transferId !== undefined) plan.transferId = transferId;
  if (i.decode.dpRank !== undefined) plan.decodeDpRank = i.decode.dpRank;
  if (!skip) {
    const tag = prefillKvTag(mode, relay, transferId);
    plan.prefill = {
      leg: "prefill",
      sampling: prefillCap(),
      ...(tag !== undefined ? { kvParamsJson: tag } : {}),
      ...(i.prefill.dpRank !== undefined ? { dataParallelRank: i.prefill.dpRank } : {}),
    };
  }
  return plan;
}

/** The tag that asks the prefill engine to keep its KV for a remote decode, or none. */
export function prefillKvTag(mode: ConnectorMode, relay: boolean, transferId: string | undefined): string | undefined {
  if (transferId !== undefined) return mooncakePrefillParamsJson(transferId);
  if (mode.kind === "nixl" && relay) return NIXL_PREFILL_PARAMS_JSON;
  return undefined;
}

export interface DecodeKv {
  spec: Omit<LegSpec, "requestId">;
  injection: KvInjection;
  /** NIXL relay expected, the prefill engine returned no handoff: counted, decode recomputes. */
  kvTransferFailure: boolean;
  /** Mooncake without a minted id over a transport with no typed bootstrap form. */
  mooncakeWithoutTypedForm: boolean;
  /** Pixels were dropped but no handoff replaces them: decode could not compute the prompt. */
  missingHandoff: boolean;
}

/** Decode's KV params once prefill answered (pd-reference 2.7 rows A-E; 6 for HTTP).
 *  `harvested` is the last non-empty handoff the prefill leg returned. */
export function planDecodeKv(plan: PdPlan, traits: TransportTraits, harvested: string | undefined): DecodeKv {
  const spec: Omit<LegSpec, "requestId"> = { leg: "decode" };
  if (plan.decodeDpRank !== undefined) spec.dataParallelRank = plan.decodeDpRank;
  const out: DecodeKv = { spec, injection: "none", kvTransferFailure: false, mooncakeWithoutTypedForm: false, missingHandoff: false };
  if (plan.skip) return out;
  const { mode } = plan;
  if (mode.kind === "mooncake" && mode.engineId !== undefined && plan.transferId !== undefined) {
    spec.kvParamsJson = mooncakeDecodeParamsJson(plan.transferId, mode.engineId, mode.host, mode.port);
    out.injection = "minted";
  } else if (mode.kind === "mooncake") {
    if (traits.typedBootstrap) {
      spec.kvBootstrap = { host: mode.host, port: mode.port };
      out.injection = "legacy";
    } else {
      out.mooncakeWithoutTypedForm = true;
    }
  } else if (plan.relay && harvested !== undefined) {
    spec.kvParamsJson = harvested;
    out.injection = "relayed";
  } else if (plan.relay && mode.kind === "nixl") {
    out.kvTransferFailure = true;
  }
  // Decision 6: with a handoff (n <= 1) decode needs no pixels (the KV carries the vision
  // work); without one it recomputes the prompt and needs them all.
  if (plan.relay && plan.pixelsOnPrefillOnly) {
    spec.stripPixels = true;
    out.missingHandoff = out.injection === "none";
  }
  return out;
}
