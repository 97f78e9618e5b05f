// Sequential PD over vLLM OpenAI servers (pd-reference 6; ARCHITECTURE decisions 1-5): the
// same skip predicate as the gRPC path, the sanitised prefill POST and its harvested
// kv_transfer_params, then the decode POST whose response the surface streams on unbuffered.
import { readLegText, startLeg, type EngineLeg } from "../backends/openai-http.js";
import { connectorMode, isMooncakeModern, type EngineKvMeta } from "./connector.js";
import { clientCancelledError, GatewayError } from "./errors.js";
import {
  buildEngineBody,
  fanoutWidth,
  harvestKvParams,
  planHttpDecodeKv,
  prefillKvTag,
  sanitisePrefillBody,
  type OpenAiRoute,
} from "./http-bodies.js";
import { errorText, legStatusError, passedThroughStatus, upstreamErrorMessage, UpstreamStatusError } from "./http-errors.js";
import { relayKvParams, shouldSkipPrefill } from "./skip.js";
import type { PdRunContext } from "./run-context.js";

/** A prefill response is one capped sample; this bounds a misbehaving engine's body (prompt
 *  logprobs of a long prompt stay far below it). */
export const MAX_PREFILL_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Bound on an engine's error body, which is only read for its message. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

export interface HttpLeg {
  name: string;
  url: string;
  meta: EngineKvMeta;
}

export interface HttpPdInput extends PdRunContext {
  route: OpenAiRoute;
  /** The client's JSON text (forwarded to decode as is, plus the KV params). */
  clientText: string;
  /** JSON.parse of clientText (not a validator's output: unknown fields must survive). */
  body: Record<string, unknown>;
  requestId: string;
  /** Headers for both legs (content type, x-request-id, trace context). */
  headers: Headers;
  prefill: HttpLeg;
  decode: HttpLeg;
}

export interface HttpPdResult {
  prefill: "ran" | "skipped";
  /** Decode's 2xx response head; its body is read through `leg`. */
  response: Response;
  leg: EngineLeg;
}

export async function runHttpSequentialPd(input: HttpPdInput): Promise<HttpPdResult> {
  const { prefill, decode, events, model } = input;
  const now = input.now ?? Date.now;
  const start = now();
  const mode = connectorMode(prefill.meta);
  const n = fanoutWidth(input.route, input.body);
  const relay = relayKvParams(n) || input.override === "force-relay";
  const transferId = isMooncakeModern(mode, relay) ? input.mintTransferId() : undefined;
  // Over HTTP both legs get the full body and there is no typed bootstrap form, so neither
  // multimodal inputs nor Mooncake make decode depend on prefill (decision 1).
  const skip =
    input.override === undefined &&
    shouldSkipPrefill({ relayKvParams: relay, hasEncodeAssignments: false, hasMmInputs: false, decodeNeedsPrefillBootstrap: false });
  input.onDecision?.(skip);
  if (input.clientSignal.aborted) throw clientCancelledError();

  let harvested: string | undefined;
  let prefillMs: number | undefined;
  if (!skip) {
    harvested = await runPrefill(input, prefillKvTag(mode, relay, transferId));
    prefillMs = now() - start;
  } else {
    console.debug(JSON.stringify({ msg: "n>1 fan-out cannot consume a KV handoff; dispatching to decode only", requestId: input.requestId, n }));
  }

  const plan = planHttpDecodeKv({ mode, relay, transferId, harvested, prefillRan: !skip });
  if (plan.kvTransferFailure) {
    events.emit({ type: "kv_transfer_failure", model, prefillEngine: prefill.name });
    console.warn(JSON.stringify({ msg: "prefill returned no kv_transfer_params; decode will recompute the prompt locally", requestId: input.requestId, engine: prefill.name }));
  }
  if (plan.mooncakeWithoutId) {
    console.warn(JSON.stringify({ msg: "Mooncake prefill engine without an engine id: no HTTP form for the typed host/port params; decode recomputes the prompt locally", requestId: input.requestId, engine: prefill.name }));
  }
  const handedOff = plan.injection !== "none";
  // Gone after prefill: without a handoff there is nothing to release, so decode is not
  // sent. With one, decode still goes out (and is closed after its first chunk) so the
  // handoff is consumed instead of pinning the prefill engine's blocks until their lease ends.
  if (input.clientSignal.aborted && !handedOff) throw clientCancelledError();

  const leg = startLeg({
    engine: decode,
    route: input.route,
    body: buildEngineBody(input.clientText, plan.paramsJson),
    headers: input.headers,
    clientSignal: input.clientSignal,
    waitUntil: input.waitUntil,
    ...(handedOff ? { deferCloseMs: input.deferredAbortMaxMs } : {}),
  });
  let response: Response;
  try {
    response = await leg.head;
  } catch (err) {
    if (input.clientSignal.aborted) throw clientCancelledError();
    events.emit({ type: "engine_outcome", model, engine: decode.name, leg: "decode", status: 502 });
    throw new GatewayError("decode_request_failed", 502, `Decode transport error: ${errorText(err)}`);
  }
  if (input.clientSignal.aborted) throw clientCancelledError();
  if (!response.ok) throw await legFailure(input, leg, response, "decode");
  events.emit({ type: "engine_outcome", model, engine: decode.name, leg: "decode", status: 200 });
  events.emit({
    type: "pd_decision",
    model,
    surface: "openai",
    connectorMode: mode.kind,
    prefill: skip ? "skipped" : "ran",
    ...(skip ? { skipReason: "fanout" as const } : {}),
    kvInjection: plan.injection,
    n,
    prefillEngine: prefill.name,
    decodeEngine: decode.name,
    ...(prefillMs !== undefined ? { prefillMs } : {}),
  });
  return { prefill: skip ? "skipped" : "ran", response, leg };
}

/** POSTs the sanitised prefill body, reads the whole response, returns its handoff. A client
 *  disconnect closes the connection at once (vLLM aborts it) and decode is never sent. */
async function runPrefill(input: HttpPdInput, kvTag: string | undefined): Promise<string | undefined> {
  const { prefill, events, model } = input;
  const outcome = (status: number) => events.emit({ type: "engine_outcome", model, engine: prefill.name, leg: "prefill", status });
  const leg = startLeg({
    engine: prefill,
    route: input.route,
    body: JSON.stringify(sanitisePrefillBody(input.route, input.body, kvTag)),
    headers: input.headers,
    clientSignal: input.clientSignal,
    waitUntil: input.waitUntil,
  });
  let response: Response;
  try {
    response = await leg.head;
  } catch (err) {
    if (input.clientSignal.aborted) throw clientCancelledError();
    outcome(502);
    throw new GatewayError("prefill_request_failed", 502, `Prefill transport error: ${errorText(err)}`);
  }
  if (!response.ok) throw await legFailure(input, leg, response, "prefill");
  let text: string;
  try {
    text = await readLegText(leg, MAX_PREFILL_RESPONSE_BYTES);
  } catch (err) {
    if (input.clientSignal.aborted) throw clientCancelledError();
    outcome(502);
    throw new GatewayError("prefill_read_failed", 502, `Prefill response could not be read: ${errorText(err)}`);
  }
  outcome(200);
  return harvestKvParams(text);
}

/** An engine's error status as the client's error: prefill passes the status through,
 *  decode maps it to its stable code (pd-reference 6). */
async function legFailure(input: HttpPdInput, leg: EngineLeg, res: Response, role: "prefill" | "decode"): Promise<GatewayError> {
  const engine = role === "prefill" ? input.prefill.name : input.decode.name;
  input.events.emit({ type: "engine_outcome", model: input.model, engine, leg: role, status: res.status });
  const status = passedThroughStatus(res.status);
  let message: string;
  try {
    message = upstreamErrorMessage(await readLegText(leg, MAX_ERROR_BODY_BYTES));
  } catch (err) {
    leg.close();
    if (input.clientSignal.aborted) return clientCancelledError();
    const m = `${role === "prefill" ? "Prefill" : "Decode"} server error: ${errorText(err)}`;
    return role === "prefill"
      ? new GatewayError("prefill_read_failed", 502, m)
      : new UpstreamStatusError("decode_read_failed", legStatusError("decode", status).status, m);
  }
  if (role === "prefill") return new GatewayError("prefill_upstream_error", status, message);
  const mapped = legStatusError("decode", status);
  return new UpstreamStatusError(mapped.code, mapped.status, message);
}
