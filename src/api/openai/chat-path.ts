// The OpenAI surface's chat completions path, as the ChatPath another surface is handed
// (src/api/chat-path.ts). The tokenizer code loads on first use, as the chat path loads it.
import type { ChatPath } from "../chat-path.js";
import { handleGeneration } from "./generation.js";
import { parseOpenAiRequest } from "./request.js";

export const openAiChatPath: ChatPath = {
  generate: (gw, request, endpoint) => handleGeneration(gw, request, "/v1/chat/completions", endpoint),
  async promptTokens(gw, chatBody) {
    const p = parseOpenAiRequest("/v1/chat/completions", JSON.stringify({ ...chatBody, stream: false }), gw.config.limits.max_n);
    const [{ chatPrompt }, { modelTokenizer }] = await Promise.all([import("./engine-prompt.js"), import("./engine-generation.js")]);
    return (await chatPrompt(p, await modelTokenizer(gw, p.model))).ids.length;
  },
};
