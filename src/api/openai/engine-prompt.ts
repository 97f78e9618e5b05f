// The prompt of an OpenAI request the gateway tokenizes (a model served by VllmEngine engines):
// chat messages rendered with the model's chat template (tool JSON read losslessly, as Python
// reads it), or a completions prompt encoded with the tokenizer's own special-token rule, or
// token ids taken as they are. Every client mistake is a 400 naming the field. A prompt is
// refused by its size before any tokenizing when no prompt that large fits the context
// (tokenizer/prompt-bound.ts), and tokenizing stops, refusing it, as soon as it reaches the
// context length; between slices of that work other requests on the isolate run.
import { GatewayError } from "../../core/errors.js";
import type { ModelTokenizer } from "../../backends/tokenizer-bundles.js";
import { renderChatTemplate } from "../../tokenizer/chat-template.js";
import { ChatTemplateError, TokenizerLimitError } from "../../tokenizer/errors.js";
import { utf8Length } from "../../core/utf8.js";
import { LosslessJsonError, parseLosslessJson, type LosslessJson } from "../../tokenizer/lossless-json.js";
import type { OpenAiRequest } from "./request.js";
import { truncateIds, truncationOf, type Truncation } from "./prompt-truncation.js";
import { vllmConversation, vllmToolDicts } from "./chat-conversation.js";

export interface EnginePrompt {
  /** The text the ids came from ("" for token-id prompts). */
  text: string;
  ids: number[];
  /** The field the prompt came in, for errors about its length. */
  field: "messages" | "prompt";
}

const invalid = (message: string, param: string, code = "invalid_request") => new GatewayError(code, 400, message, undefined, param);

export interface PromptLimits {
  /** The operator's `models.<m>.max_prompt_bytes`, lowering the derived bound. */
  maxPromptBytes?: number;
}

export async function chatPrompt(p: OpenAiRequest, tok: ModelTokenizer, limits: PromptLimits = {}): Promise<EnginePrompt> {
  const body = p.body;
  // Lossless: floats stay floats and keys keep their order in tool schemas and arguments.
  const lossless = readLossless(p.text);
  // What vLLM hands its templates: the messages and tools rebuilt (chat-conversation.ts).
  const messages = vllmConversation(lossless.get("messages") as LosslessJson[]);
  const tools = vllmToolDicts(lossless.get("tools"));
  const documents = lossless.get("documents");
  const kwargs = body.chat_template_kwargs;
  if (kwargs !== undefined && kwargs !== null && (typeof kwargs !== "object" || Array.isArray(kwargs))) {
    throw invalid("chat_template_kwargs: must be an object", "chat_template_kwargs");
  }
  const addGenerationPrompt = optionalBool(body, "add_generation_prompt") ?? true;
  const continueFinalMessage = optionalBool(body, "continue_final_message") ?? false;
  const hasTools = Array.isArray(tools) && tools.length > 0;
  let text: string;
  try {
    const template = await tok.chatTemplate({ hasTools });
    text = await renderChatTemplate(template, {
      messages,
      tools,
      documents: Array.isArray(documents) ? documents : null,
      // vLLM: continuing the final message means not opening a new assistant turn.
      addGenerationPrompt: continueFinalMessage ? false : addGenerationPrompt,
      continueFinalMessage,
      kwargs: (kwargs ?? {}) as Record<string, unknown>,
      tokenizerConfig: tok.tokenizer.config,
    });
  } catch (err) {
    if (err instanceof ChatTemplateError) throw templateError(err);
    throw err;
  }
  // The template adds the special tokens itself; add_special_tokens adds the tokenizer's too.
  const addSpecial = optionalBool(body, "add_special_tokens") ?? false;
  const cut = truncationOf(true, body, tok.maxContextLength);
  const ids = await boundedIds(tok, text, addSpecial, "messages", limits, cut);
  // The rendered text, as the template wrote it (it may drop parts of the messages).
  return { text: cut && ids.length === cut.keep ? "" : text, ids, field: "messages" };
}

export async function completionPrompt(p: OpenAiRequest, tok: ModelTokenizer, limits: PromptLimits = {}): Promise<EnginePrompt> {
  const body = p.body;
  const addSpecial = optionalBool(body, "add_special_tokens") ?? true;
  const cut = truncationOf(false, body, tok.maxContextLength);
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && (typeof prompt[0] === "string" || Array.isArray(prompt[0]))) prompt = prompt[0];
  if (typeof prompt === "string") {
    if (prompt === "") throw invalid("prompt: must not be empty", "prompt");
    // The tokenizer's own rule for special tokens (BOS where its post-processor adds one).
    const ids = await boundedIds(tok, prompt, addSpecial, "prompt", limits, cut);
    return { text: cut && ids.length === cut.keep ? "" : prompt, ids, field: "prompt" };
  }
  if (Array.isArray(prompt) && prompt.every((x) => typeof x === "number")) return { text: "", ids: truncateIds(prompt as number[], cut), field: "prompt" };
  throw invalid("prompt: batched prompts are not supported for a model served by VllmEngine engines; send one prompt per request", "prompt");
}

/** The prompt's ids, or a 400 naming `field`: refused by its size before tokenizing when no
 *  prompt that large fits the context, and as soon as tokenizing reaches the context length. */
async function boundedIds(tok: ModelTokenizer, text: string, addSpecialTokens: boolean, field: "messages" | "prompt", limits: PromptLimits, cut: Truncation | undefined): Promise<number[]> {
  if (cut) return truncateIds(await truncatedEncode(tok, text, addSpecialTokens, field), cut);
  const context = tok.maxContextLength;
  const bound = tok.tokenizer.promptByteBound(context, limits.maxPromptBytes);
  if (bound !== undefined && text.length > bound / 3) {
    const bytes = utf8Length(text);
    if (bytes > bound) {
      const why = context === undefined ? `the limit for this model is ${bound} bytes` : `no prompt of more than ${bound} bytes fits this model's maximum context length of ${context} tokens`;
      throw invalid(`The ${field} is ${bytes} bytes (UTF-8); ${why}`, field, "context_length_exceeded");
    }
  }
  try {
    const r = await tok.tokenizer.encodeWithin(text, { addSpecialTokens, maxTokens: context ?? Infinity });
    if (!r.exceeded) return r.ids;
    throw invalid(`This model's maximum context length is ${context} tokens, and the ${field} has at least ${r.atLeast} tokens (tokenizing stopped there), leaving no room for output`, field, "context_length_exceeded");
  } catch (err) {
    if (err instanceof TokenizerLimitError) throw invalid(`${field}: ${err.message}`, field, "prompt_run_too_long");
    throw err;
  }
}

/** The whole prompt's ids, to be truncated: no context bound (the body's size bounds it). */
async function truncatedEncode(tok: ModelTokenizer, text: string, addSpecialTokens: boolean, field: "messages" | "prompt"): Promise<number[]> {
  try {
    const r = await tok.tokenizer.encodeWithin(text, { addSpecialTokens, maxTokens: Infinity });
    return r.ids ?? [];
  } catch (err) {
    if (err instanceof TokenizerLimitError) throw invalid(`${field}: ${err.message}`, field, "prompt_run_too_long");
    throw err;
  }
}

/** The body as Python reads it. request.ts has refused what this reader cannot take (nesting
 *  deeper than its limit); anything it still refuses is the client's JSON, never a 500. */
function readLossless(text: string): Map<string, LosslessJson> {
  try {
    return parseLosslessJson(text) as Map<string, LosslessJson>;
  } catch (err) {
    if (err instanceof LosslessJsonError) throw new GatewayError("invalid_json", 400, `request body: ${err.message}`);
    throw err;
  }
}

function optionalBool(body: Record<string, unknown>, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw invalid(`${field}: must be a boolean`, field);
  return v;
}

/** A chat the template cannot render is the client's to fix: 400, naming the feature when
 *  the edge renderer lacks one. */
function templateError(err: ChatTemplateError): GatewayError {
  if (err.kind === "unsupported_feature") {
    return invalid(`The model's chat template uses a feature the gateway cannot render: ${err.feature ?? err.message}`, "messages", "chat_template_unsupported");
  }
  return invalid(err.kind === "raise_exception" ? `The model's chat template refused this chat: ${err.message}` : err.message, "messages", "chat_template_error");
}
