// POST /v1/messages/count_tokens for a model only VllmEngine engines serve: exact, because it
// is the chat path's own prompt (engine-prompt.ts: the model's template, its tokenizer) for the
// converted chat, so the count is the ids the engine would receive.
import type { GatewayContext } from "../../context.js";
// eslint-disable-next-line no-restricted-imports -- count_tokens is the chat path's own prompt, not a copy
import { parseOpenAiRequest } from "../openai/request.js";
import { messagesToChat } from "./messages-chat.js";

export async function countTokensViaChat(gw: GatewayContext, body: Record<string, unknown>): Promise<Response> {
  const chat = messagesToChat({ ...body, stream: false });
  const p = parseOpenAiRequest("/v1/chat/completions", JSON.stringify(chat), gw.config.limits.max_n);
  // Loaded on demand, as the chat path loads it: the tokenizer code stays out of other requests.
  const [{ chatPrompt }, { modelTokenizer }] = await Promise.all([import("../openai/engine-prompt.js"), import("../openai/engine-generation.js")]);
  const prompt = await chatPrompt(p, await modelTokenizer(gw, p.model));
  return new Response(JSON.stringify({ input_tokens: prompt.ids.length }), { status: 200, headers: { "content-type": "application/json" } });
}
