// A Messages request for a model only VllmEngine engines serve, through the gateway's own chat
// completions path (as vLLM serves Messages): the request becomes a chat request to the OpenAI
// surface's handler (a ChatPath app.ts hands this surface), recorded in the metrics under /v1/messages; its answer (JSON, or SSE
// chunks) becomes the Message or the Messages events, its errors Anthropic's shape.
import type { GatewayContext } from "../../context.js";
import { GatewayError } from "../../core/errors.js";
import { anthropicErrorResponse } from "../../errors/anthropic.js";
import { chatEventsOf } from "../chat-events.js";
import type { ChatPath } from "../chat-path.js";
import { chatToMessage, messagesToChat } from "./messages-chat.js";
import { MessagesEventWriter } from "./messages-chat-stream.js";

type Json = Record<string, unknown>;

/** Headers of the client's request that the chat path reads. */
const PASSED_HEADERS = ["x-request-id", "x-routing-key", "x-pd-override", "traceparent", "tracestate"];

export function chatRequest(request: Request, chatBody: Json): Request {
  const headers = new Headers({ "content-type": "application/json" });
  for (const h of PASSED_HEADERS) {
    const v = request.headers.get(h);
    if (v !== null) headers.set(h, v);
  }
  return new Request(new URL("/v1/chat/completions", request.url), { method: "POST", headers, body: JSON.stringify(chatBody) });
}

/** `handedOff` is called when the chat path takes the request (its metrics record it). */
export async function messagesViaChat(gw: GatewayContext, chat: ChatPath, request: Request, body: Json, headers: Headers, handedOff: () => void): Promise<Response> {
  const chatBody = messagesToChat(body);
  handedOff();
  const res = await chat.generate(gw, chatRequest(request, chatBody), "/v1/messages");
  for (const [k, v] of res.headers) if (k.startsWith("x-")) headers.set(k, v);
  if (res.status !== 200) return anthropicErrorResponse(await chatError(res), headers);
  const id = `msg_${crypto.randomUUID().replaceAll("-", "")}`;
  if (body.stream !== true) {
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(chatToMessage((await res.json()) as Json, body, id)), { status: 200, headers });
  }
  const writer = new MessagesEventWriter(body, id);
  headers.set("content-type", "text/event-stream");
  headers.set("cache-control", "no-cache");
  return new Response(chatEventsOf(res.body!, writer), { status: 200, headers });
}

/** The chat path's OpenAI-shaped error, as a GatewayError to render in Anthropic's shape. */
async function chatError(res: Response): Promise<GatewayError> {
  const text = await res.text();
  let e: Json = {};
  try {
    e = ((JSON.parse(text) as Json).error as Json | undefined) ?? {};
  } catch {
    e = { message: text };
  }
  const code = res.headers.get("x-gateway-error-code") ?? String(e.code ?? "engine_error");
  return new GatewayError(code, res.status, String(e.message ?? ""), undefined, typeof e.param === "string" ? e.param : undefined);
}
