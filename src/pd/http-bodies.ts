// The HTTP PD path's bodies (pd-reference 6): the prefill sanitiser, the KV params each leg
// gets, the decode body (the client's bytes plus one member) and the harvest of the prefill
// response's kv_transfer_params. Pure: the executor (http-sequential.ts) does the I/O.
import {
  NIXL_PREFILL_PARAMS_JSON,
  mooncakeDecodeParamsJson,
  mooncakePrefillParamsJson,
  type ConnectorMode,
} from "./connector.js";
import type { KvInjection } from "./grpc-requests.js";
import { memberValueText, withMember } from "./json-members.js";
import { normaliseN } from "./skip.js";

export type OpenAiRoute = "/v1/chat/completions" | "/v1/completions";

export const KV_PARAMS_KEY = "kv_transfer_params";

/** How many sequences a request asks for: n, times the prompts of a batched completions
 *  request. Each sequence would pull the single-consumer handoff, so a batch is fan-out too. */
export function fanoutWidth(route: OpenAiRoute, body: Record<string, unknown>): number {
  const n = normaliseN(typeof body.n === "number" ? body.n : undefined);
  return n * (route === "/v1/completions" ? promptCount(body.prompt) : 1);
}

function promptCount(prompt: unknown): number {
  if (!Array.isArray(prompt) || prompt.length === 0) return 1;
  // A list of token ids is one prompt; a list of strings or of token-id lists is a batch.
  return prompt.every((p) => typeof p === "number") ? 1 : prompt.length;
}

/** The tag that asks the prefill engine to keep its KV for a remote decode, or none. */
export function prefillKvTag(mode: ConnectorMode, relay: boolean, transferId: string | undefined): string | undefined {
  if (transferId !== undefined) return mooncakePrefillParamsJson(transferId);
  if (mode.kind === "nixl" && relay) return NIXL_PREFILL_PARAMS_JSON;
  return undefined;
}

/** The prefill leg's body: one non-streamed sample capped at one output token (a
 *  length-capped finish is what makes the engine return its handoff), the connector's tag,
 *  every other field (messages, temperature, seed, stop, ...) as the client sent it. */
export function sanitisePrefillBody(route: OpenAiRoute, body: Record<string, unknown>, kvTag: string | undefined): Record<string, unknown> {
  const p: Record<string, unknown> = { ...body };
  p.stream = false;
  delete p.stream_options;
  if ("n" in p) p.n = 1;
  delete p.min_tokens;
  if (route === "/v1/chat/completions" && p.max_completion_tokens !== undefined && p.max_completion_tokens !== null) {
    p.max_completion_tokens = 1;
    delete p.max_tokens;
  } else {
    p.max_tokens = 1;
  }
  // Only the gateway sets KV params: a client's would make an engine pull from where it says.
  delete p[KV_PARAMS_KEY];
  if (kvTag !== undefined) p[KV_PARAMS_KEY] = JSON.parse(kvTag) as unknown;
  return p;
}

/** The prefill response's top-level kv_transfer_params as raw JSON text, verbatim; undefined
 *  when missing, null, not an object, or the body is not a JSON object. */
export function harvestKvParams(responseText: string): string | undefined {
  try {
    JSON.parse(responseText);
  } catch {
    return undefined;
  }
  const v = memberValueText(responseText, KV_PARAMS_KEY);
  return v !== undefined && v.startsWith("{") ? v : undefined;
}

export interface HttpDecodeKvOptions {
  mode: ConnectorMode;
  relay: boolean;
  transferId?: string;
  harvested?: string;
  prefillRan: boolean;
}

export interface HttpDecodeKvPlan {
  /** Top-level kv_transfer_params for the decode body, as JSON text. */
  paramsJson?: string;
  injection: KvInjection;
  /** NIXL relay expected, the prefill engine returned none: counted, decode recomputes. */
  kvTransferFailure: boolean;
  /** Mooncake without a minted id: the typed host/port form has no HTTP equivalent. */
  mooncakeWithoutId: boolean;
}

/** Decode's KV params (pd-reference 6, the HTTP column of 2.7's rows A, C, D). */
export function planHttpDecodeKv(o: HttpDecodeKvOptions): HttpDecodeKvPlan {
  const plan: HttpDecodeKvPlan = { injection: "none", kvTransferFailure: false, mooncakeWithoutId: false };
  if (!o.prefillRan) return plan;
  const { mode } = o;
  if (mode.kind === "mooncake") {
    if (mode.engineId !== undefined && o.transferId !== undefined) {
      plan.paramsJson = mooncakeDecodeParamsJson(o.transferId, mode.engineId, mode.host, mode.port);
      plan.injection = "minted";
    } else {
      plan.mooncakeWithoutId = true;
    }
  } else if (o.relay && o.harvested !== undefined) {
    plan.paramsJson = o.harvested;
    plan.injection = "relayed";
  } else if (o.relay && mode.kind === "nixl") {
    plan.kvTransferFailure = true;
  }
  return plan;
}

/** The decode (or aggregated) leg's body: the client's JSON text with any client
 *  kv_transfer_params dropped and the gateway's put first. Other members keep their bytes. */
export function buildEngineBody(clientText: string, paramsJson: string | undefined): string {
  const out = withMember(clientText, KV_PARAMS_KEY, paramsJson);
  if (out === undefined) throw new Error("client body is not a JSON object");
  return out;
}
