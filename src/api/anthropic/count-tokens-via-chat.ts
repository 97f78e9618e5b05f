// POST /v1/messages/count_tokens for a model only VllmEngine engines serve: exact, because it
// is the chat path's own prompt (the model's template, its tokenizer) for the converted chat,
// so the count is the ids the engine would receive.
import type { GatewayContext } from "../../context.js";
import type { ChatPath } from "../chat-path.js";
import { messagesToChat } from "./messages-chat.js";

export async function countTokensViaChat(gw: GatewayContext, chat: ChatPath, body: Record<string, unknown>): Promise<Response> {
  const inputTokens = await chat.promptTokens(gw, messagesToChat({ ...body, stream: false }));
  return new Response(JSON.stringify({ input_tokens: inputTokens }), { status: 200, headers: { "content-type": "application/json" } });
}
