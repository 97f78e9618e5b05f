// Builds the two legs' GenerateRequests from the client's request (pd-reference 2.4, 2.6,
// 2.7; ARCHITECTURE decision 6 for pixels). Pure: the caller mints ids and does the I/O.
import { clone, create } from "@bufbuild/protobuf";
import {
  GenerateRequestSchema,
  KvTransferParamsSchema,
  SamplingParamsSchema,
  type GenerateRequest,
} from "../gen/vllm_engine_pb.js";
import {
  NIXL_PREFILL_PARAMS_JSON,
  mooncakeDecodeParamsJson,
  mooncakePrefillParamsJson,
  type ConnectorMode,
} from "./connector.js";

/** How decode got its KV handoff (pd-reference 2.7 rows A-E). */
export type KvInjection = "minted" | "legacy" | "relayed" | "none";

export interface PrefillRequestOptions {
  mode: ConnectorMode;
  relay: boolean;
  /** Mooncake transfer id, minted only for Mooncake-with-engine-id and relay. */
  transferId?: string;
  /** DP rank of the prefill engine when DP-aware; unset leaves the field unset. */
  dpRank?: number;
}

/** The prefill leg: force a length-capped, non-streamed, single-sample finish so the engine
 *  returns its handoff; every other sampling field (temperature, seed, constraints) unchanged. */
export function buildPrefillRequest(req: GenerateRequest, opts: PrefillRequestOptions): GenerateRequest {
  const p = clone(GenerateRequestSchema, req);
  const sp = p.samplingParams ?? create(SamplingParamsSchema);
  sp.maxTokens = 1;
  sp.minTokens = 0;
  sp.n = 1;
  sp.stop = [];
  sp.stopTokenIds = [];
  sp.ignoreEos = true;
  p.samplingParams = sp;
  p.stream = false;
  p.kvTransferParams = undefined;
  p.kvTransferParamsJson = undefined;
  if (opts.dpRank !== undefined) p.dataParallelRank = opts.dpRank;
  if (opts.mode.kind === "nixl" && opts.relay) p.kvTransferParamsJson = NIXL_PREFILL_PARAMS_JSON;
  if (opts.transferId !== undefined) p.kvTransferParamsJson = mooncakePrefillParamsJson(opts.transferId);
  return p;
}

export interface DecodeRequestOptions {
  mode: ConnectorMode;
  relay: boolean;
  transferId?: string;
  /** The last non-empty kv_transfer_params_json the prefill leg returned. */
  harvested?: string;
  dpRank?: number;
  /** Whether the prefill leg ran (it did not when skipped for fan-out). */
  prefillRan: boolean;
}

export interface DecodeRequestPlan {
  request: GenerateRequest;
  injection: KvInjection;
  /** Row D: NIXL relay expected, the prefill engine returned no params. */
  kvTransferFailure: boolean;
  /** Pixel tensors were dropped because decode receives the KV handoff instead. */
  pixelsStripped: boolean;
}

export function buildDecodeRequest(req: GenerateRequest, opts: DecodeRequestOptions): DecodeRequestPlan {
  const d = clone(GenerateRequestSchema, req);
  if (opts.dpRank !== undefined) d.dataParallelRank = opts.dpRank;
  let injection: KvInjection = "none";
  let kvTransferFailure = false;
  const { mode } = opts;
  if (opts.prefillRan) {
    if (mode.kind === "mooncake" && mode.engineId !== undefined && opts.transferId !== undefined) {
      d.kvTransferParamsJson = mooncakeDecodeParamsJson(opts.transferId, mode.engineId, mode.host, mode.port);
      injection = "minted";
    } else if (mode.kind === "mooncake") {
      d.kvTransferParams = create(KvTransferParamsSchema, { remoteHost: mode.host, remotePort: mode.port });
      injection = "legacy";
    } else if (opts.relay && opts.harvested) {
      d.kvTransferParamsJson = opts.harvested;
      injection = "relayed";
    } else if (opts.relay && mode.kind === "nixl") {
      kvTransferFailure = true;
    }
  }
  // Decision 6: with a handoff (n <= 1) decode needs no pixels (the KV carries the vision
  // work; SHM segments are already consumed); without one it recomputes and needs them all.
  let pixelsStripped = false;
  if (opts.prefillRan && opts.relay && d.mmInputs) {
    d.mmInputs.pixelValues = undefined;
    pixelsStripped = true;
  }
  return { request: d, injection, kvTransferFailure, pixelsStripped };
}

export function hasMmInputs(req: GenerateRequest): boolean {
  return req.mmInputs !== undefined;
}
