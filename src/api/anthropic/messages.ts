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
    if (req.stream) return streamed(gw, stream, headers, { leg, metrics });
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
}

function streamed(gw: GatewayContext, stream: LegStream<Uint8Array>, headers: Headers, { leg, metrics }: StreamScope): Response {
  let firstOutputAt: number | undefined;
  let lastOutputAt: number | undefined;
  let inputTokens: number | undefined;
  let outputTokens = 0;
  const body = eventRelay(stream, {
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
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  return new Response(body, { status: 200, headers });
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
