// Sequential PD over VllmEngine clients (pd-reference 2, ARCHITECTURE decisions 1-6): plan
// the legs, run or skip prefill, establish decode, and own the abort rules for both legs.
import { Code } from "@connectrpc/connect";
import type { GenerateRequest, GenerateResponse } from "../gen/vllm_engine_pb.js";
import type { VllmEngineClient } from "../backends/vllm-engine.js";
import type { Surface } from "../metrics/events.js";
import type { PdRunContext } from "./run-context.js";
import { connectorMode, isMooncakeModern, type EngineKvMeta } from "./connector.js";
import { buildDecodeRequest, buildPrefillRequest, hasMmInputs } from "./grpc-requests.js";
import { GatewayError, clientCancelledError, legError } from "./errors.js";
import { openEngineStream } from "./engine-stream.js";
import { normaliseN, relayKvParams, shouldSkipPrefill } from "./skip.js";
import { sendAbort } from "./engine-abort.js";
import { chargeLoad } from "../routing/load.js";

export interface GrpcLeg {
  name: string;
  client: VllmEngineClient;
  meta: EngineKvMeta;
}

export type { PdOverride } from "./run-context.js";

export interface GrpcPdInput extends PdRunContext {
  request: GenerateRequest;
  surface: Surface;
  prefill: GrpcLeg;
  decode: GrpcLeg;
  hasEncodeAssignments: boolean;
  /** Per-leg timeouts (ms): the prefill drain, and decode's first frame. */
  prefillTimeoutMs: number;
  firstFrameTimeoutMs: number;
}

export interface GrpcPdResult {
  prefill: "ran" | "skipped";
  /** Decode's frames, first one already received. Iterate to the end or return() to cancel. */
  stream: AsyncIterable<GenerateResponse>;
}

export const clientCancelled = clientCancelledError;

export async function runGrpcSequentialPd(input: GrpcPdInput): Promise<GrpcPdResult> {
  const { request, prefill, decode, events, model } = input;
  const now = input.now ?? Date.now;
  const mode = connectorMode(prefill.meta);
  const n = normaliseN(request.samplingParams?.n);
  const relay = relayKvParams(n) || input.override === "force-relay";
  const transferId = isMooncakeModern(mode, relay) ? input.mintTransferId() : undefined;
  const skip =
    input.override === undefined &&
    shouldSkipPrefill({
      relayKvParams: relay,
      hasEncodeAssignments: input.hasEncodeAssignments,
      hasMmInputs: hasMmInputs(request),
      decodeNeedsPrefillBootstrap: mode.kind === "mooncake",
    });
  input.onDecision?.(skip);
  if (input.clientSignal.aborted) throw clientCancelled();

  let harvested: string | undefined;
  let prefillMs: number | undefined;
  let kvWindowStart = 0;
  if (!skip) {
    const p = buildPrefillRequest(request, { mode, relay, transferId, dpRank: prefill.meta.dpRank });
    const t0 = now();
    harvested = await drainPrefill(input, p);
    prefillMs = now() - t0;
    kvWindowStart = now();
  }

  const plan = buildDecodeRequest(request, {
    mode,
    relay,
    transferId,
    harvested,
    dpRank: decode.meta.dpRank,
    prefillRan: !skip,
  });
  if (plan.kvTransferFailure) {
    events.emit({ type: "kv_transfer_failure", model, prefillEngine: prefill.name });
    console.warn(JSON.stringify({ msg: "prefill returned no kv_transfer_params; decode will recompute the prompt locally", requestId: request.requestId, engine: prefill.name }));
  }
  if (plan.pixelsStripped && plan.injection === "none") {
    throw new GatewayError("pd_decode_missing_kv_transfer_params", 502, "Prefill returned no KV handoff for a multimodal request whose decode leg has no pixels", Code.Unavailable);
  }
  const handedOff = plan.injection !== "none";
  const decodeStream = await openEngineStream({
    engine: decode,
    request: plan.request,
    leg: "decode",
    model,
    events,
    clientSignal: input.clientSignal,
    waitUntil: input.waitUntil,
    handedOff,
    deferredAbortMaxMs: input.deferredAbortMaxMs,
    firstFrameTimeoutMs: input.firstFrameTimeoutMs,
    startError: { code: "decode_worker_failed_to_start", prefix: "Decode worker failed to start", timeoutCode: "decode_timeout" },
  });
  events.emit({
    type: "pd_decision",
    model,
    surface: input.surface,
    connectorMode: mode.kind,
    prefill: skip ? "skipped" : "ran",
    ...(skip ? { skipReason: "fanout" as const } : {}),
    kvInjection: plan.injection,
    n,
    prefillEngine: prefill.name,
    decodeEngine: decode.name,
    ...(prefillMs !== undefined ? { prefillMs } : {}),
    ...(handedOff && !skip ? { kvTransferMs: now() - kvWindowStart } : {}),
  });
  return { prefill: skip ? "skipped" : "ran", stream: decodeStream };
}

/** Runs the prefill leg to its end and returns the last non-empty handoff JSON. A client
 *  disconnect here aborts prefill at once and decode is never sent. */
async function drainPrefill(input: GrpcPdInput, p: GenerateRequest): Promise<string | undefined> {
  const { prefill, events, model } = input;
  const controller = new AbortController();
  const onClientAbort = () => {
    controller.abort();
    input.waitUntil(sendAbort(prefill.client, p.requestId, prefill.name));
  };
  input.clientSignal.addEventListener("abort", onClientAbort, { once: true });
  let frames = 0;
  let harvested: string | undefined;
  const releaseLoad = chargeLoad(prefill.name);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
    input.waitUntil(sendAbort(prefill.client, p.requestId, prefill.name));
  }, input.prefillTimeoutMs);
  try {
    for await (const frame of prefill.client.generate(p, { signal: controller.signal })) {
      frames++;
      const json = frame.response.case === "complete" ? frame.response.value.kvTransferParamsJson : undefined;
      if (json) harvested = json;
    }
  } catch (err) {
    if (input.clientSignal.aborted) throw clientCancelled();
    const e = timedOut
      ? new GatewayError("prefill_timeout", 504, `Prefill worker did not finish within ${input.prefillTimeoutMs} ms`, Code.DeadlineExceeded)
      : frames === 0
      ? legError(err, "prefill_worker_failed_to_start", "Prefill worker failed to start")
      : legError(err, "prefill_stream_error", "Prefill stream error");
    events.emit({ type: "engine_outcome", model, engine: prefill.name, leg: "prefill", status: e.status });
    throw e;
  } finally {
    clearTimeout(timer);
    releaseLoad();
    input.clientSignal.removeEventListener("abort", onClientAbort);
  }
  // A client that left after the drain completed still gets its decode dispatched (with the
  // handoff, then aborted by the deferred rule), so the prefill's blocks are consumed or
  // rejected instead of pinned until the lease.
  events.emit({ type: "engine_outcome", model, engine: prefill.name, leg: "prefill", status: 200 });
  return harvested;
}

