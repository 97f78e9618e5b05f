// POST /v1/messages and /v1/messages/count_tokens (the Anthropic Messages API) for models on
// openai-http engines: vLLM serves the API itself, so the request goes to the engines as the
// client sent it. In PD mode the prefill leg is vLLM's /v1/messages capped to one token with the
// NIXL tag, its handoff relayed to decode (vLLM PR 37535), as on chat. Errors are Anthropic's
// shape (errors/anthropic.ts), with the same stable codes as every surface.
import { routedConfig, type GatewayContext } from "../../context.js";
import { readBodyText } from "../../core/body-text.js";
import { errorText, GatewayError, UpstreamStatusError } from "../../core/errors.js";
import { optional } from "../../core/optional.js";
import { engineRequestHeaders, engineRouteUrl, passedThroughStatus, upstreamErrorMessage } from "../../backends/openai-http.js";
import { anthropicErrorEvent, anthropicErrorResponse } from "../../errors/anthropic.js";
import { toGatewayError } from "../../errors/render.js";
import type { LegStream } from "../../pd/leg.js";
import { estimatePromptTokens } from "../../pd/prompt-tokens.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import { engineRequestIdFor } from "../../routing/client-requests.js";
import { OPENAI_HTTP_TRANSPORTS, openAiHttpFamily } from "../../routing/families.js";
import { noEngineError, runPipeline } from "../../routing/pipeline.js";
import { enginesOf } from "../../routing/select.js";
import { eventRelay, type NamedEvent } from "../event-relay.js";
import { readLegBody } from "../leg-body.js";
import { modelAvailability } from "../model-availability.js";
import { pdOverrideOf } from "../pd-override.js";
import { requestIdOf } from "../request-id.js";
import { messagesText, parseMessagesRequest, type MessagesRequest } from "./request.js";

export async function handleMessages(gw: GatewayContext, request: Request): Promise<Response> {
  const started = Date.now();
  const headers = new Headers();
  const ev = { model: "", streaming: false, backend: "none" as "pd" | "regular" | "none" };
  const record = (status: number, errorCode?: string) =>
    gw.events.emit({ type: "request", model: ev.model, surface: "anthropic", endpoint: "/v1/messages", backend: ev.backend, streaming: ev.streaming, status, ...optional("errorCode", errorCode), durationMs: Date.now() - started });
  try {
    const req = parseMessagesRequest(await readBodyText(request, gw.config.limits.max_body_bytes));
    [ev.model, ev.streaming] = [req.model, req.stream];
    const requestId = requestIdOf(request.headers);
    headers.set("x-request-id", requestId);
    refuseUnlessServed(gw, req.model);
    const { stream } = await runPipeline(gw.pipeline(req.model), {
      job: {
        model: req.model,
        surface: "anthropic",
        payload: { route: "/v1/messages", text: req.text, body: req.body, stream: req.stream, clientHeaders: request.headers },
        fanout: 1,
        hasMmInputs: false,
        promptTokens: () => estimatePromptTokens(messagesText(req.body)),
        ...optional("override", pdOverrideOf(request.headers, gw.config.debug.allow_pd_overrides)),
      },
      family: openAiHttpFamily(gw.isolate),
      clientRequestId: requestId,
      requestId: engineRequestIdFor(gw.owner, requestId),
      owner: gw.owner,
      ...optional("routingKey", request.headers.get("x-routing-key") ?? undefined),
      prefixText: () => ({ text: messagesText(req.body, 1024) }),
      onDecision: (reason) => headers.set("x-pd-prefill", prefillDecisionHeader(reason)),
      onBackend: (b) => (ev.backend = b),
    });
    if (req.stream) return streamed(gw, req, stream, headers, { started, leg: ev.backend === "regular" ? "engine" : "decode", record });
    const body = await readLegBody(stream, gw.clientSignal);
    record(200);
    headers.set("content-type", "application/json");
    return new Response(body, { status: 200, headers });
  } catch (err) {
    const e = toGatewayError(err, "Messages API");
    record(e.status, e.code);
    return anthropicErrorResponse(e, headers);
  }
}

/** The Messages API is served here for models on openai-http engines; a model only VllmEngine
 *  engines serve is refused by name (docs/responses-and-messages.md). */
function refuseUnlessServed(gw: GatewayContext, model: string): void {
  const availability = modelAvailability(routedConfig(gw), model);
  if (availability === "openai") return;
  if (availability === "engine-only") {
    throw new GatewayError("unsupported_model_api", 400, `model: '${model}' is served only by VllmEngine engines, which do not serve the Messages API yet; use /v1/chat/completions`, undefined, "model");
  }
  throw noEngineError(gw, model);
}

interface StreamScope {
  started: number;
  leg: "engine" | "decode";
  record(status: number, errorCode?: string): void;
}

function streamed(gw: GatewayContext, req: MessagesRequest, stream: LegStream<Uint8Array>, headers: Headers, { started, leg, record }: StreamScope): Response {
  let firstDeltaAt: number | undefined;
  let lastDeltaAt: number | undefined;
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
        lastDeltaAt = Date.now();
        firstDeltaAt ??= lastDeltaAt;
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
    onEnd: (end) => {
      record(end.status, end.errorCode);
      if (end.outcome !== "completed") return;
      gw.events.emit({
        type: "stream_complete",
        model: req.model,
        surface: "anthropic",
        endpoint: "/v1/messages",
        ...optional("ttftMs", firstDeltaAt === undefined ? undefined : firstDeltaAt - started),
        ...optional("tpotMs", firstDeltaAt !== undefined && lastDeltaAt !== undefined && outputTokens > 1 ? (lastDeltaAt - firstDeltaAt) / (outputTokens - 1) : undefined),
        generationMs: Date.now() - started,
        ...optional("inputTokens", inputTokens),
        outputTokens,
      });
    },
  });
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  return new Response(body, { status: 200, headers });
}

interface Usage {
  input_tokens?: number;
  output_tokens?: number;
}

function eventType(e: NamedEvent): string | undefined {
  if (e.event !== undefined) return e.event;
  return /"type"\s*:\s*"([^"]+)"/.exec(e.data)?.[1];
}

/** POST /v1/messages/count_tokens: asked of one of the model's engines (vLLM renders the
 *  prompt with the model's own chat template, so the count is the engine's). */
export async function handleCountTokens(gw: GatewayContext, request: Request): Promise<Response> {
  try {
    const req = parseMessagesRequest(await readBodyText(request, gw.config.limits.max_body_bytes), true);
    refuseUnlessServed(gw, req.model);
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
