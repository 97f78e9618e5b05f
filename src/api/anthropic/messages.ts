// POST /v1/messages and /v1/messages/count_tokens (the Anthropic Messages API) for models on
// openai-http engines: vLLM serves the API itself, so the request goes to the engines as the
// client sent it. In PD mode the prefill leg is vLLM's /v1/messages capped to one token with the
// NIXL tag, its handoff relayed to decode (vLLM PR 37535), as on chat. Errors are Anthropic's
// shape (errors/anthropic.ts), with the same stable codes as every surface.
import { routedConfig, type GatewayContext } from "../../context.js";
import { readBodyText } from "../../core/body-text.js";
import { errorText, GatewayError, UpstreamStatusError } from "../../core/errors.js";
import { engineRequestHeaders, engineRouteUrl, passedThroughStatus, upstreamErrorMessage } from "../../backends/openai-http.js";
import { anthropicErrorEvent, anthropicErrorResponse } from "../../errors/anthropic.js";
import { toGatewayError } from "../../errors/render.js";
import type { LegStream } from "../../pd/leg.js";
import { OPENAI_HTTP_TRANSPORTS } from "../../routing/families.js";
import { noEngineError } from "../../routing/pipeline.js";
import { enginesOf } from "../../routing/select.js";
import { eventRelay, eventType } from "../event-relay.js";
import { NativeRelay } from "../native-relay.js";
import { MessagesWatch } from "./messages-watch.js";
import { runHttpApiJob } from "../http-api-job.js";
import { RequestMetrics } from "../request-metrics.js";
import { readLegBody } from "../leg-body.js";
import { modelAvailability } from "../model-availability.js";
import { requestIdOf } from "../request-id.js";
import type { ChatPath } from "../chat-path.js";
import { countTokensViaChat } from "./count-tokens-via-chat.js";
import { messagesViaChat } from "./messages-via-chat.js";
import { messagesText, parseMessagesRequest } from "./request.js";

export async function handleMessages(gw: GatewayContext, chat: ChatPath, request: Request): Promise<Response> {
  const metrics = new RequestMetrics(gw.events, "anthropic", "/v1/messages", gw.arrivedAt);
  const headers = new Headers();
  // Once the chat path has the request, its metrics writer records it (under /v1/messages).
  let recording = true;
  try {
    const req = parseMessagesRequest(await readBodyText(request, gw.config.limits.max_body_bytes));
    metrics.named(req.model, req.stream);
    const requestId = requestIdOf(request.headers);
    headers.set("x-request-id", requestId);
    if (servedBy(gw, req.model) === "engine-only") return await messagesViaChat(gw, chat, request, req.body, headers, () => (recording = false));
    const { stream, leg } = await runHttpApiJob(gw, { model: req.model, surface: "anthropic", route: "/v1/messages", text: req.text, body: req.body, stream: req.stream, promptText: () => messagesText(req.body), requestId, request }, metrics, headers);
    if (req.stream) return await streamed(gw, stream, headers, { leg, metrics, native: gw.routing.models[req.model]?.sse_relay === "native" });
    const body = await readLegBody(stream, gw.clientSignal);
    metrics.end(200);
    headers.set("content-type", "application/json");
    return new Response(body, { status: 200, headers });
  } catch (err) {
    const e = toGatewayError(err, "Messages API");
    if (recording) metrics.end(e.status, e.code);
    return anthropicErrorResponse(e, headers);
  }
}

/** Models on openai-http engines get the API from vLLM itself; a model only VllmEngine engines
 *  serve gets it through the gateway's chat path (docs/responses-and-messages.md). */
function servedBy(gw: GatewayContext, model: string): "openai" | "engine-only" {
  const availability = modelAvailability(routedConfig(gw), model);
  if (availability === "openai" || availability === "engine-only") return availability;
  throw noEngineError(gw, model);
}

interface StreamScope {
  leg: "engine" | "decode";
  metrics: RequestMetrics;
  /** The model's sse_relay is "native": the engine's bytes piped, watched behind the client. */
  native: boolean;
}

async function streamed(gw: GatewayContext, stream: LegStream<Uint8Array>, headers: Headers, scope: StreamScope): Promise<Response> {
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  const body = scope.native ? await nativeBody(gw, stream, scope) : inspectedBody(gw, stream, scope);
  return new Response(body, { status: 200, headers });
}

/** The native relay's body; the inspecting relay's when the leg cannot hand its body over
 *  (what its first read gave then goes back in front of the rest, an error included). */
async function nativeBody(gw: GatewayContext, stream: LegStream<Uint8Array>, { leg, metrics }: StreamScope): Promise<ReadableStream<Uint8Array>> {
  let first: IteratorResult<Uint8Array> | { error: unknown };
  try {
    first = await stream.next();
  } catch (error) {
    first = { error };
  }
  const detached = "done" in first && !first.done ? stream.detach?.() : undefined;
  if (!detached || !("done" in first) || first.done) return inspectedBody(gw, withFirst(stream, first), { leg, metrics, native: false });
  const watch = new MessagesWatch({
    leg, engine: stream.engine, maxEventBytes: gw.config.bounds.max_sse_event_bytes, now: Date.now,
    onEnd: (end, s) => metrics.end(end.status, end.errorCode, { firstOutputAt: s.firstOutputAt, lastOutputAt: s.lastOutputAt, outputTokens: s.outputTokens, inputTokens: s.inputTokens }),
  });
  return new NativeRelay(detached, watch, { clientSignal: gw.clientSignal, waitUntil: (p) => gw.waitUntil(p), errorEvent: anthropicErrorEvent }).start(first.value);
}

/** The leg with what a read already gave put back in front. */
function withFirst(stream: LegStream<Uint8Array>, first: IteratorResult<Uint8Array> | { error: unknown }): LegStream<Uint8Array> {
  let head: typeof first | undefined = first;
  return {
    ...stream,
    next() {
      const r = head;
      head = undefined;
      if (!r) return stream.next();
      return "error" in r ? Promise.reject(r.error) : Promise.resolve(r);
    },
  };
}

/** sse_relay "inspect": every event read in JavaScript on its way (event-relay.ts). */
function inspectedBody(gw: GatewayContext, stream: LegStream<Uint8Array>, { leg, metrics }: StreamScope): ReadableStream<Uint8Array> {
  let firstOutputAt: number | undefined;
  let lastOutputAt: number | undefined;
  let inputTokens: number | undefined;
  let outputTokens = 0;
  return eventRelay(stream, {
    engine: stream.engine,
    leg,
    clientSignal: gw.clientSignal,
    maxEventBytes: gw.config.bounds.max_sse_event_bytes,
    now: Date.now,
    onEvent: (e) => {
      const type = eventType(e);
      if (type === "content_block_delta") {
        lastOutputAt = Date.now();
        firstOutputAt ??= lastOutputAt;
      } else if (type === "message_start" || type === "message_delta") {
        const json = JSON.parse(e.data) as { message?: { usage?: Usage }; usage?: Usage };
        const usage = json.message?.usage ?? json.usage;
        if (typeof usage?.input_tokens === "number") inputTokens = usage.input_tokens;
        if (typeof usage?.output_tokens === "number") outputTokens = usage.output_tokens;
      }
      return e;
    },
    isFinal: (e) => {
      const type = eventType(e);
      return type === "message_stop" || type === "error";
    },
    errorEvent: anthropicErrorEvent,
    onEnd: (end) => metrics.end(end.status, end.errorCode, { firstOutputAt, lastOutputAt, outputTokens, inputTokens }),
  });
}

interface Usage {
  input_tokens?: number;
  output_tokens?: number;
}


/** POST /v1/messages/count_tokens: asked of one of the model's engines (vLLM renders the
 *  prompt with the model's own chat template, so the count is the engine's). */
export async function handleCountTokens(gw: GatewayContext, chat: ChatPath, request: Request): Promise<Response> {
  try {
    const req = parseMessagesRequest(await readBodyText(request, gw.config.limits.max_body_bytes), true);
    if (servedBy(gw, req.model) === "engine-only") return await countTokensViaChat(gw, chat, req.body);
    const [engine] = enginesOf(gw.routing, req.model, OPENAI_HTTP_TRANSPORTS);
    if (!engine) throw noEngineError(gw, req.model);
    let res: Response;
    try {
      res = await gw.isolate.engines.fetchFor(engine)(engineRouteUrl(engine.url, "/v1/messages/count_tokens"), {
        method: "POST",
        headers: engineRequestHeaders(request.headers, requestIdOf(request.headers), false),
        body: req.text,
        signal: gw.clientSignal,
      });
    } catch (err) {
      throw new GatewayError("engine_unreachable", 502, `count_tokens: engine '${engine.name}' could not be reached: ${errorText(err)}`);
    }
    const text = await res.text();
    if (!res.ok) throw new UpstreamStatusError("engine_upstream_error", passedThroughStatus(res.status), `engine '${engine.name}': ${upstreamErrorMessage(text)}`);
    return new Response(text, { status: 200, headers: { "content-type": "application/json" } });
  } catch (err) {
    return anthropicErrorResponse(toGatewayError(err, "Messages API"));
  }
}
