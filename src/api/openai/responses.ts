// POST /v1/responses for models on openai-http engines, and the stored responses behind GET
// and DELETE /v1/responses/{id}. The gateway keeps the conversation state (a Durable Object per
// response, conversations/): a request with previous_response_id is expanded into the whole
// conversation, and every engine gets `store: false`, so engines stay stateless and any engine
// can serve the next turn. In PD mode the prefill leg is vLLM's own /v1/responses capped to one
// token with the NIXL tag (backends/openai-bodies.ts), its handoff relayed to decode, as on chat.
import type { GatewayContext } from "../../context.js";
import { viaChat } from "./responses-via-chat.js";
import { openAiErrorResponse, sseErrorEvent } from "../../errors/openai.js";
import { toGatewayError } from "../../errors/render.js";
import type { LegStream } from "../../pd/leg.js";
import { noEngineError } from "../../routing/pipeline.js";
import { readBodyText } from "../../core/body-text.js";
import { eventRelay, eventType } from "../event-relay.js";
import { runHttpApiJob } from "../http-api-job.js";
import { RequestMetrics } from "../request-metrics.js";
import { readLegBody } from "../leg-body.js";
import { modelAvailability } from "../model-availability.js";
import { requestIdOf } from "../request-id.js";
import { routedConfig } from "../../context.js";
import { conversationText } from "./responses-conversation.js";
import { parseResponsesRequest } from "./responses-request.js";
import { clientResponse, responseNotFound, storeLater, storeTurn, turnOf, type Turn } from "./responses-turn.js";

/** The events after which a Responses stream is over (the SDK's terminal events). */
const FINAL_EVENTS: ReadonlySet<string> = new Set(["response.completed", "response.incomplete", "response.failed", "error"]);

export async function handleResponses(gw: GatewayContext, request: Request): Promise<Response> {
  const metrics = new RequestMetrics(gw.events, "openai", "/v1/responses", gw.arrivedAt);
  const headers = new Headers();
  // Once the chat path has the request, its metrics writer records it: this one stays silent.
  let recording = true;
  try {
    const req = parseResponsesRequest(await readBodyText(request, gw.config.limits.max_body_bytes));
    metrics.named(req.model, req.stream);
    const requestId = requestIdOf(request.headers);
    headers.set("x-request-id", requestId);
    const path = servingPath(gw, req.model);
    const turn = await turnOf(gw, req);
    // The chat path records the request itself (under /v1/responses).
    if (path === "chat") return await viaChat(gw, request, turn, headers, () => (recording = false));
    const engineBody: Record<string, unknown> = { ...req.body, input: turn.conversation, store: false };
    delete engineBody.previous_response_id;
    const text = JSON.stringify(engineBody);
    const promptText = () => conversationText(req.body.instructions, turn.conversation);
    const { stream, leg } = await runHttpApiJob(gw, { model: req.model, surface: "openai", route: "/v1/responses", text, body: engineBody, stream: req.stream, promptText, requestId, request }, metrics, headers);
    if (req.stream) return streamed(gw, turn, stream, headers, { leg, metrics });
    const response = clientResponse(JSON.parse(new TextDecoder().decode(await readLegBody(stream, gw.clientSignal))) as Record<string, unknown>, turn);
    if (turn.stored) await storeTurn(gw, turn, response);
    metrics.end(200);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(response), { status: 200, headers });
  } catch (err) {
    const e = toGatewayError(err, "Responses API");
    if (recording) metrics.end(e.status, e.code);
    return openAiErrorResponse(e, headers);
  }
}

/** How the model serves the Responses API: the engines' own /v1/responses, or chat
 *  completions (VllmEngine engines, where the gateway tokenizes chat; `apis_via_chat`). */
function servingPath(gw: GatewayContext, model: string): "native" | "chat" {
  const config = routedConfig(gw);
  switch (modelAvailability(config, model)) {
    case "openai":
      return config.models[model]!.apis_via_chat ? "chat" : "native";
    case "engine-only":
      return "chat";
    default:
      throw noEngineError(gw, model);
  }
}

interface StreamScope {
  leg: "engine" | "decode";
  metrics: RequestMetrics;
}

function streamed(gw: GatewayContext, turn: Turn, stream: LegStream<Uint8Array>, headers: Headers, { leg, metrics }: StreamScope): Response {
  let firstOutputAt: number | undefined;
  let lastOutputAt: number | undefined;
  let completed: Record<string, unknown> | undefined;
  const body = eventRelay(stream, {
    engine: stream.engine,
    leg,
    clientSignal: gw.clientSignal,
    maxEventBytes: gw.config.bounds.max_sse_event_bytes,
    now: Date.now,
    onEvent: (e) => {
      const type = eventType(e);
      if (type === "response.output_text.delta" || type === "response.function_call_arguments.delta" || type === "response.reasoning_text.delta") {
        lastOutputAt = Date.now();
        firstOutputAt ??= lastOutputAt;
      }
      if (!type?.startsWith("response.") || !e.data.includes('"response"')) return e;
      const json = JSON.parse(e.data) as { response?: Record<string, unknown> };
      if (typeof json.response !== "object" || json.response === null) return e;
      json.response = clientResponse(json.response, turn);
      if (type === "response.completed" || type === "response.incomplete") completed = json.response;
      return { event: e.event, data: JSON.stringify(json) };
    },
    isFinal: (e) => FINAL_EVENTS.has(eventType(e) ?? ""),
    errorEvent: sseErrorEvent,
    onEnd: (end) => {
      const usage = completed?.usage as { input_tokens?: number; output_tokens?: number } | undefined;
      metrics.end(end.status, end.errorCode, { firstOutputAt, lastOutputAt, outputTokens: usage?.output_tokens ?? 0, inputTokens: usage?.input_tokens });
      if (end.outcome !== "completed" || !completed || !turn.stored) return;
      storeLater(gw, turn, completed);
    },
  });
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  return new Response(body, { status: 200, headers });
}

/** GET /v1/responses/{id}: the stored response, for the key that stored it. */
export async function getStoredResponse(gw: GatewayContext, id: string): Promise<Response> {
  const stored = gw.responseStore ? await gw.responseStore.get(id, gw.owner) : undefined;
  if (!stored) return openAiErrorResponse(responseNotFound(id));
  return new Response(stored.response, { status: 200, headers: { "content-type": "application/json" } });
}

/** DELETE /v1/responses/{id}. */
export async function deleteStoredResponse(gw: GatewayContext, id: string): Promise<Response> {
  const deleted = gw.responseStore ? await gw.responseStore.delete(id, gw.owner) : false;
  if (!deleted) return openAiErrorResponse(responseNotFound(id));
  return Response.json({ id, object: "response.deleted", deleted: true });
}
