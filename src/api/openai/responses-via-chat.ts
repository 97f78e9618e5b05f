// A Responses request served through the gateway's own chat completions path (responses.ts
// decides when): the request becomes a chat request to the OpenAI surface's handler, whose
// answer (JSON, or SSE chunks) becomes the response object or the Responses events. The turn
// is stored as on the native path.
import type { GatewayContext } from "../../context.js";
import { chatEventsOf } from "../chat-events.js";
import { handleGeneration } from "./generation.js";
import { chatToResponse, responsesToChat } from "./responses-chat.js";
import { ResponsesEventWriter } from "./responses-chat-stream.js";
import { clientResponse, storeLater, storeTurn, type Turn } from "./responses-turn.js";

type Json = Record<string, unknown>;

/** Headers of the client's request that the chat path reads. */
const PASSED_HEADERS = ["x-request-id", "x-routing-key", "x-pd-override", "traceparent", "tracestate"];

/** `handedOff` is called when the chat path takes the request (and records it in the metrics,
 *  under /v1/responses): a failure before that is the caller's to record. */
export async function viaChat(gw: GatewayContext, request: Request, turn: Turn, headers: Headers, handedOff: () => void): Promise<Response> {
  const chatHeaders = new Headers({ "content-type": "application/json" });
  for (const h of PASSED_HEADERS) {
    const v = request.headers.get(h);
    if (v !== null) chatHeaders.set(h, v);
  }
  const chatBody = responsesToChat(turn.req.body, turn.conversation);
  handedOff();
  const res = await handleGeneration(gw, new Request(new URL("/v1/chat/completions", request.url), { method: "POST", headers: chatHeaders, body: JSON.stringify(chatBody) }), "/v1/chat/completions", "/v1/responses");
  for (const [k, v] of res.headers) if (k.startsWith("x-")) headers.set(k, v);
  if (res.status !== 200) return new Response(res.body, { status: res.status, headers: res.headers });
  const createdAt = Math.floor(Date.now() / 1000);
  if (!turn.req.stream) {
    const response = clientResponse(chatToResponse((await res.json()) as Json, turn.req.body, turn.id, createdAt), turn);
    if (turn.stored) await storeTurn(gw, turn, response);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(response), { status: 200, headers });
  }
  const writer = new ResponsesEventWriter(turn.req.body, turn.id, createdAt);
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  const onEnd = turn.stored ? () => storeLater(gw, turn, clientResponse(writer.final(), turn)) : undefined;
  return new Response(chatEventsOf(res.body!, writer, onEnd), { status: 200, headers });
}
