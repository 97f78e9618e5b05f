// The context check for models served by OpenAI HTTP engines (the gateway does not tokenize
// their text): once this isolate knows the model's max_model_len (GET /v1/models, learned in
// the background), a request vLLM would refuse is refused before any engine work. Token-id
// prompts are checked by their length plus the output cap; text prompts only when the output
// cap alone fills the context.
import type { GatewayContext } from "../../context.js";
import { openAiHttpContext } from "../../backends/model-contexts.js";
import { OPENAI_HTTP_TRANSPORTS } from "../../routing/families.js";
import { enginesOf } from "../../routing/select.js";
import { contextWindowError, maxTokensField, outputCapError } from "../context-window.js";
import type { OpenAiRequest } from "./request.js";

export function refuseBeyondHttpContext(gw: GatewayContext, p: OpenAiRequest): void {
  const [engine] = enginesOf(gw.routing, p.model, OPENAI_HTTP_TRANSPORTS);
  const limit = gw.isolate.modelContexts.known(p.model, () => (engine ? openAiHttpContext(engine, p.model, gw.isolate.engines.fetchFor(engine)) : undefined), gw.waitUntil);
  if (limit === undefined) return;
  const chat = p.route === "/v1/chat/completions";
  const { field, value } = maxTokensField(chat, p.body);
  const promptTokens = chat ? undefined : longestTokenIdPrompt(p.body.prompt);
  const e =
    promptTokens === undefined
      ? outputCapError({ maxTokens: value, maxField: field, maxContextLength: limit })
      : contextWindowError({ promptTokens, maxTokens: value, maxField: field, promptField: "prompt", maxContextLength: limit });
  if (e) throw e;
}

/** The longest prompt's length when the prompt is token ids (one list or a batch of lists). */
function longestTokenIdPrompt(prompt: unknown): number | undefined {
  if (!Array.isArray(prompt) || prompt.length === 0) return undefined;
  if (prompt.every((x) => typeof x === "number")) return prompt.length;
  if (prompt.every((x) => Array.isArray(x) && x.every((t) => typeof t === "number"))) return Math.max(...prompt.map((x: unknown[]) => x.length));
  return undefined;
}
