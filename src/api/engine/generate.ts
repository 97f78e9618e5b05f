// Generate on the VllmEngine surface: build the job, run the pipeline, render the result. The
// client's GenerateRequest becomes the job (api/job.ts); the pipeline (routing/pipeline.ts)
// selects, runs and retries it; the frames go back to the client as they come. The metrics
// writer (api/request-metrics.ts) records one `request` event per client request.
import { Code, type HandlerContext } from "@connectrpc/connect";
import type { GenerateRequest, GenerateResponse } from "../../gen/vllm_engine_pb.js";
import { GatewayError, httpStatusForCode } from "../../core/errors.js";
import { uuidv7 } from "../../core/ids.js";
import { normaliseN, prefillDecisionHeader } from "../../pd/skip.js";
import { runPipeline } from "../../routing/pipeline.js";
import { enginesOf } from "../../routing/select.js";
import { vllmEngineFamily } from "../../routing/families.js";
import { checkClientRequest } from "./client-request.js";
import { contextWindowError, outputCapError } from "../context-window.js";
import { vllmEngineContext } from "../../backends/model-contexts.js";
import { VLLM_ENGINE_TRANSPORTS } from "../../routing/families.js";
import type { GatewayContext } from "../../context.js";
import { errorCodeOf, toConnectError } from "./errors.js";
import { gatewayOf, modelOf } from "./gateway-of.js";
import { buildJob } from "../job.js";
import { RequestMetrics } from "../request-metrics.js";
import { StreamTiming } from "./stream-timing.js";
import { headLatchKey } from "./early-head.js";
import { rawHandoverKey, type RawHandover } from "./raw-handover.js";
import { RawRelay, type RawRelayOptions, type RelayEnd } from "./raw-relay.js";
import { withRawBodies } from "../../backends/vllm-engine-raw-call.js";
import type { RawLeg } from "../../pd/leg.js";

export async function* generate(req: GenerateRequest, ctx: HandlerContext): AsyncIterable<GenerateResponse> {
  const gw = gatewayOf(ctx);
  const metrics = new RequestMetrics(gw.events, "engine", "generate", gw.arrivedAt, { streamed: req.stream });
  const timing = new StreamTiming({ streamed: req.stream });
  let status = 200;
  let errorCode: string | undefined;
  let completed = false;
  try {
    const model = modelOf(gw, ctx);
    metrics.named(model, req.stream);
    const checked = checkClientRequest(req, { maxN: gw.config.limits.max_n }, () => `gen-${uuidv7()}`);
    if (!checked.ok) throw new GatewayError("invalid_request", 400, checked.message, Code.InvalidArgument, checked.field);
    const request = checked.request;
    refuseBeyondContext(gw, model, request);
    const job = buildJob(gw, {
      model,
      surface: "engine",
      endpoint: "generate",
      payload: request,
      prompt: () => (request.input.case === "tokenized" ? { tokens: request.input.value.inputIds } : { text: request.input.value ?? "" }),
      fanout: normaliseN(request.samplingParams?.n),
      hasMmInputs: request.mmInputs !== undefined,
      streamed: request.stream,
      clientRequestId: request.requestId,
      headers: ctx.requestHeader,
    });
    metrics.forJob(job);
    const handover = ctx.values.get(rawHandoverKey);
    // Before the head goes out: the response body it comes with depends on it (early-head.ts).
    if (handover) handover.nativeTail = gw.routing.models[model]?.generate_relay === "native";
    const family = vllmEngineFamily(gw.isolate, gw.config.pd.engine_info_ttl_ms);
    const result = await runPipeline(gw.pipeline(model), {
      job,
      family: handover ? { ...family, transport: withRawBodies(family.transport, handover.protocol, gw.isolate.engines) } : family,
      onDecision: (reason) => {
        ctx.responseHeader.set("x-pd-prefill", prefillDecisionHeader(reason));
        // The head is final now: let the router send it (early-head.ts).
        ctx.values.get(headLatchKey)?.open(ctx.responseHeader);
      },
      onBackend: (b) => metrics.backend(b),
      onCluster: (cluster) => ctx.responseHeader.set("x-gateway-cluster", cluster),
    });
    const { stream } = result;
    const raw = handover && stream.detachRaw?.();
    if (raw) {
      const logPaths = gw.config.debug.log_paths;
      if (logPaths) console.debug(JSON.stringify({ msg: "relaying the engine's frames as sent", requestId: result.engineRequestId, protocol: handover.protocol }));
      // The head is final (a regular engine makes no PD decision): the body goes out now.
      ctx.values.get(headLatchKey)?.open(ctx.responseHeader);
      const end = await relayed(handover, raw, timing, { nativeTail: handover.nativeTail, logPaths, clientSignal: gw.clientSignal });
      if (end.outcome === "failed") throw end.error;
      if (end.outcome === "cancelled") [status, errorCode] = [499, "client_cancelled"];
      completed = end.outcome === "completed";
      return;
    }
    try {
      for (;;) {
        const r = await stream.next();
        if (r.done) break;
        timing.observe(r.value);
        yield r.value;
      }
      completed = true;
    } finally {
      // The client stopped reading (it went away mid-stream): abort the leg now.
      if (!completed) stream.cancel();
    }
  } catch (err) {
    // Recorded here; turned into the client's ConnectError by gatewayErrorInterceptor.
    status = err instanceof GatewayError ? err.status : httpStatusForCode(toConnectError(err).code);
    errorCode = errorCodeOf(err);
    throw err;
  } finally {
    if (gw.clientSignal.aborted && errorCode === undefined && !completed) {
      status = 499;
      errorCode = "client_cancelled";
    }
    metrics.end(status, errorCode, completed ? timing.stats() : undefined);
  }
}

/** Hands the leg's raw body to the response (raw-relay.ts) and waits for the relay's end. */
function relayed(handover: RawHandover, leg: RawLeg, timing: StreamTiming, o: RawRelayOptions): Promise<RelayEnd> {
  const relay = new RawRelay(leg, handover.protocol, timing, o);
  if (!handover.give(relay)) relay.cancel(); // the client already left
  return relay.ended;
}

/** A request that cannot fit the model's context (once this isolate knows it) is refused
 *  before any engine work, as the engine would refuse it after the prefill leg ran for
 *  nothing: token-id input by its length plus max_tokens; text input (whose length the
 *  gateway does not know) only when max_tokens alone fills the context. */
function refuseBeyondContext(gw: GatewayContext, model: string, request: GenerateRequest): void {
  const [engine] = enginesOf(gw.routing, model, VLLM_ENGINE_TRANSPORTS);
  const limit = gw.isolate.modelContexts.known(model, () => (engine ? vllmEngineContext(gw.isolate.engines.vllmEngine(engine)) : undefined), gw.waitUntil);
  const maxTokens = request.samplingParams?.maxTokens;
  const maxField = "sampling_params.max_tokens";
  const e =
    request.input.case === "tokenized"
      ? contextWindowError({ promptTokens: request.input.value.inputIds.length, maxTokens, maxField, promptField: "tokenized.input_ids", maxContextLength: limit })
      : outputCapError({ maxTokens, maxField, maxContextLength: limit });
  if (e) throw new GatewayError(e.code, e.status, e.message, Code.InvalidArgument, e.param);
}
