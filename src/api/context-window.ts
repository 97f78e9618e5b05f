// The context-window check: prompt tokens plus the requested output must fit the model's
// context length (GetModelInfo max_context_length, or /v1/models max_model_len). Checked
// before any engine work, so a request vLLM would refuse never runs a prefill leg first.
// Where the prompt's token count is not known (text the gateway does not tokenize), only
// what is certain is refused: an output cap that leaves no room for even one prompt token.
// Pure.
import { GatewayError } from "../core/errors.js";

export interface ContextWindowInput {
  promptTokens: number;
  /** The client's output cap, if it sent one. */
  maxTokens: number | undefined;
  /** The field it came in (max_tokens, or max_completion_tokens on chat). */
  maxField: string;
  /** The field the prompt came in (messages, prompt). */
  promptField: string;
  /** Unknown when no engine reported it: the engine then checks alone. */
  maxContextLength: number | undefined;
}

export function contextWindowError(i: ContextWindowInput): GatewayError | undefined {
  const limit = i.maxContextLength;
  if (limit === undefined) return undefined;
  if (i.promptTokens >= limit) {
    return tooLong(`This model's maximum context length is ${limit} tokens, and the ${i.promptField} has ${i.promptTokens} tokens, leaving no room for output`, i.promptField);
  }
  if (i.maxTokens !== undefined && i.promptTokens + i.maxTokens > limit) {
    return tooLong(
      `This model's maximum context length is ${limit} tokens; the ${i.promptField} has ${i.promptTokens} tokens and ${i.maxField} asks for ${i.maxTokens} (${i.promptTokens + i.maxTokens} in all)`,
      i.maxField,
    );
  }
  return undefined;
}

export interface OutputCapInput {
  maxTokens: number | undefined;
  maxField: string;
  maxContextLength: number | undefined;
}

/** For a prompt of unknown length (at least one token): refused when the output cap alone
 *  fills the context. */
export function outputCapError(i: OutputCapInput): GatewayError | undefined {
  if (i.maxContextLength === undefined || i.maxTokens === undefined || i.maxTokens < i.maxContextLength) return undefined;
  return tooLong(
    `This model's maximum context length is ${i.maxContextLength} tokens; ${i.maxField} asks for ${i.maxTokens}, which leaves no room for the prompt`,
    i.maxField,
  );
}

function tooLong(message: string, param: string): GatewayError {
  return new GatewayError("context_length_exceeded", 400, message, undefined, param);
}

/** The output-cap field a request uses: on chat, max_completion_tokens wins over max_tokens. */
export function maxTokensField(chat: boolean, body: Record<string, unknown>): { field: string; value: number | undefined } {
  const field = chat && body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? "max_completion_tokens" : "max_tokens";
  const v = body[field];
  return { field, value: typeof v === "number" ? v : undefined };
}
