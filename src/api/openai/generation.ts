// POST /v1/chat/completions and /v1/completions: build the job, run the pipeline, render the
// result. A model served by VllmEngine engines goes to engine-generation.ts (the gateway
// tokenizes). Otherwise the client's JSON becomes the job (api/job.ts); the pipeline
// (routing/pipeline.ts) selects, runs and retries it; the engine's answer goes back as it
// comes (event by event) or whole. The metrics writer (api/request-metrics.ts) records one
// `request` event per client request, whatever happens.
import { routedConfig, type GatewayContext } from "../../context.js";
import { concatBytes } from "../../core/body.js";
import { clientCancelledError, errorText, GatewayError, UpstreamStatusError } from "../../core/errors.js";
import { optional } from "../../core/optional.js";
import { relayResponseHeaders } from "../../backends/openai-http.js";
import type { OpenAiRoute } from "../../backends/openai-bodies.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import type { LegStream } from "../../pd/leg.js";
import type { JobEndpoint } from "../../pd/job.js";
import { openAiHttpFamily } from "../../routing/families.js";
import { noEngineError, runPipeline } from "../../routing/pipeline.js";
import { buildJob } from "../job.js";
import { RequestMetrics, type OutputStats } from "../request-metrics.js";
import { openAiErrorResponse, sseErrorResponse } from "../../errors/openai.js";
import { toGatewayError } from "../../errors/render.js";
import { modelAvailability } from "../model-availability.js";
import { sseRelay, type RelayStats } from "./relay.js";
import { refuseBeyondHttpContext } from "./http-context.js";
import { fanoutWidth, jobPromptOf, parseOpenAiRequest, type OpenAiRequest } from "./request.js";
import { readBodyText } from "../../core/body-text.js";
import { requestIdOf } from "../request-id.js";

/** The tokenizing path (and the tokenizer and template libraries under it) loads on the first
 *  request to a model served by VllmEngine engines, not at the isolate's start-up. */
let engineGeneration: Promise<typeof import("./engine-generation.js")> | undefined;
const loadEngineGeneration = () => (engineGeneration ??= import("./engine-generation.js"));

/** Bound on a non-streamed response the gateway holds before answering. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** How the model is served on this surface: relayed to openai-http engines, tokenized by the
 *  gateway for VllmEngine engines, or not at all (a 404 / 503 naming it). */
function servingPath(gw: GatewayContext, model: string): "openai-http" | "vllm-engine" {
  switch (modelAvailability(routedConfig(gw), model)) {
    case "openai":
      return "openai-http";
    case "engine-only":
      return "vllm-engine";
    default:
      throw noEngineError(gw, model);
  }
}

/** `endpoint` is what the metrics record: the route, or the API a request came in on when
 *  another surface serves it through this one (Responses over chat). */
export async function handleGeneration(gw: GatewayContext, req: Request, route: OpenAiRoute, endpoint: JobEndpoint = route): Promise<Response> {
  const metrics = new RequestMetrics(gw.events, "openai", endpoint, gw.arrivedAt);
  const headers = new Headers();
  let streamed = false;
  try {
    const p = parseOpenAiRequest(route, await readBodyText(req, gw.config.limits.max_body_bytes), gw.config.limits.max_n);
    streamed = p.stream;
    metrics.named(p.model, p.stream);
    const requestId = requestIdOf(req.headers);
    headers.set("x-request-id", requestId);
    if (servingPath(gw, p.model) === "vllm-engine") {
      return await (await loadEngineGeneration()).handleEngineGeneration(gw, p, req.headers, { requestId, headers, metrics });
    }
    refuseBeyondHttpContext(gw, p);
    const job = buildJob(gw, {
      model: p.model,
      surface: "openai",
      endpoint: route,
      payload: { route, text: p.text, body: p.body, stream: p.stream, clientHeaders: req.headers },
      prompt: () => jobPromptOf(p),
      fanout: fanoutWidth(route, p.body),
      // Both HTTP legs get the full body: multimodal content never depends on prefill.
      hasMmInputs: false,
      streamed: p.stream,
      clientRequestId: requestId,
      headers: req.headers,
    });
    metrics.forJob(job);
    let backend: "pd" | "regular" = "regular";
    const { stream } = await runPipeline(gw.pipeline(p.model), {
      job,
      family: openAiHttpFamily(gw.isolate),
      onDecision: (reason) => headers.set("x-pd-prefill", prefillDecisionHeader(reason)),
      onBackend: (b) => metrics.backend((backend = b)),
      onCluster: (cluster) => headers.set("x-gateway-cluster", cluster),
    });
    return await render(gw, p, stream, { requestId, headers, metrics, leg: backend === "regular" ? "engine" : "decode" });
  } catch (err) {
    const e = toGatewayError(err, "OpenAI surface");
    metrics.end(e.status, e.code);
    return streamed && e instanceof UpstreamStatusError ? sseErrorResponse(e, headers) : openAiErrorResponse(e, headers);
  }
}

/** The engine's answer for the client: relayed event by event, or whole. */
async function render(
  gw: GatewayContext,
  p: OpenAiRequest,
  stream: LegStream<Uint8Array>,
  s: { requestId: string; headers: Headers; metrics: RequestMetrics; leg: "decode" | "engine" },
): Promise<Response> {
  const out = relayResponseHeaders(stream.headers());
  // The gateway's own headers: the request id and the PD decision (no iteration needed).
  out.set("x-request-id", s.requestId);
  for (const name of ["x-pd-prefill", "x-gateway-cluster"]) {
    const v = s.headers.get(name);
    if (v !== null) out.set(name, v);
  }
  if (!p.stream) {
    const body = await passThrough(gw, stream);
    s.metrics.end(200);
    return new Response(body, { status: 200, headers: out });
  }
  const body = await sseRelay(stream, {
    native: gw.routing.models[p.model]?.sse_relay === "native",
    waitUntil: gw.waitUntil,
    ...optional("engine", stream.engine),
    maxEventBytes: gw.config.bounds.max_sse_event_bytes,
    leg: s.leg,
    clientSignal: gw.clientSignal,
    now: Date.now,
    onEnd: (end) => s.metrics.end(end.status, end.errorCode, outputStatsOf(end.stats)),
  });
  return new Response(body, { status: 200, headers: out });
}

/** What the SSE relay saw, for the metrics writer: the first and last data events sent. */
function outputStatsOf(s: RelayStats): OutputStats {
  return {
    firstOutputAt: s.firstEventAt,
    lastOutputAt: s.lastEventAt,
    outputTokens: s.usage?.completionTokens ?? s.outputPieces,
    inputTokens: s.usage?.promptTokens,
  };
}

/** A non-streamed answer as the engine sent it: the engine's own body handed to the client
 *  untouched (LegStream.detach; over HTTP the leg's first frame is the answer's head, which
 *  vLLM sends with the finished answer), so relaying it costs no JS at all; the runtime
 *  passes a client's cancel on to the engine's connection. Where the leg cannot hand its
 *  body over, it is read whole (bounded). */
async function passThrough(gw: GatewayContext, stream: LegStream<Uint8Array>): Promise<ReadableStream<Uint8Array> | Uint8Array> {
  const first = await stream.next(); // the frame the pipeline already read: it cannot fail now
  if (first.done) return new Uint8Array(0);
  const detached = first.value.byteLength === 0 ? stream.detach?.() : undefined;
  if (!detached) return readWhole(gw, stream, first.value);
  // The engine has answered: its load and the leg end here; the bytes are the runtime's.
  detached.end("completed");
  return detached.body;
}

/** A non-streamed answer, whole (bounded), read straight off the leg after its first frame. */
async function readWhole(gw: GatewayContext, stream: LegStream<Uint8Array>, first: Uint8Array): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [first];
  let size = first.byteLength;
  try {
    for (;;) {
      const r = await stream.next();
      if (r.done) break;
      size += r.value.byteLength;
      if (size > MAX_RESPONSE_BYTES) throw new GatewayError("response_too_large", 502, `engine response: body is larger than ${MAX_RESPONSE_BYTES} bytes`);
      chunks.push(r.value);
    }
  } catch (err) {
    stream.cancel();
    if (gw.clientSignal.aborted) throw clientCancelledError();
    if (err instanceof GatewayError) throw err;
    throw new GatewayError("response_too_large", 502, `engine response: ${errorText(err)}`);
  }
  return concatBytes(chunks, size);
}
