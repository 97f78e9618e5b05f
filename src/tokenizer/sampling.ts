// OpenAI chat/completions request fields -> VllmEngine SamplingParams, field by field, with the
// ranges vLLM's OpenAI server enforces. Errors name the OpenAI field (for a 400 with `param`).
//
// Stop strings are sent to the engine AND applied by the gateway: the engine stops generating
// (no tokens wasted past the stop, and its servicer detokenizes only when stop is set), but the
// engine returns token ids, so the client's text, cut at the stop, is the gateway's detokenizer's.
import { create } from "@bufbuild/protobuf";
import { SamplingParamsSchema, type SamplingParams } from "../gen/vllm_engine_pb.js";
import { constraintOf } from "./constraint.js";
import type { DetokenizerOptions } from "./detokenizer.js";
import { SamplingParamError } from "./errors.js";

export type OpenAiApi = "chat" | "completions";

export interface SamplingPlan {
  samplingParams: SamplingParams;
  /** For the gateway's detokenizer (stop strings, special tokens). */
  detokenizer: DetokenizerOptions;
  n: number;
  /** Logprobs to return per token, or undefined for none (chat: top_logprobs; completions: logprobs). */
  logprobs: number | undefined;
  /** Logprobs per prompt token (vLLM's prompt_logprobs), or undefined for none. */
  promptLogprobs: number | undefined;
  /** Logprob tokens written as "token_id:<id>" (vLLM's return_tokens_as_token_ids). */
  tokensAsIds: boolean;
  stream: boolean;
  includeUsage: boolean;
  /** Usage on every chunk too (stream_options.continuous_usage_stats, with include_usage). */
  continuousUsage: boolean;
}

export interface SamplingLimits {
  /** GetModelInfo max_context_length: bounds prompt + max_tokens. */
  maxContextLength?: number;
  promptTokens?: number;
  /** vLLM's n cap (default 128). */
  maxN?: number;
}

/** vLLM's default --max-logprobs: the most logprobs per token it returns. */
export const MAX_LOGPROBS = 20;

type Body = Record<string, unknown>;

const INT32_MAX = 2 ** 31 - 1;

function num(body: Body, field: string, min: number, max: number, opts: { int?: boolean; exclusiveMin?: boolean } = {}): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new SamplingParamError(field, "must be a number");
  if (opts.int && !Number.isInteger(v)) throw new SamplingParamError(field, "must be an integer");
  if (opts.exclusiveMin ? v <= min : v < min) throw new SamplingParamError(field, `must be ${opts.exclusiveMin ? "greater than" : "at least"} ${min}`);
  if (v > max) throw new SamplingParamError(field, `must be at most ${max}`);
  return v;
}

function bool(body: Body, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw new SamplingParamError(field, "must be a boolean");
  return v;
}

function stopStrings(body: Body): string[] {
  const v = body.stop;
  if (v === undefined || v === null) return [];
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v as string[];
  throw new SamplingParamError("stop", "must be a string or an array of strings");
}

function tokenIds(body: Body, field: string): number[] {
  const v = body[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 0xffffffff)) {
    throw new SamplingParamError(field, "must be an array of non-negative token ids");
  }
  return v as number[];
}

function logitBias(body: Body): Record<number, number> {
  const v = body.logit_bias;
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw new SamplingParamError("logit_bias", "must be an object of token id -> bias");
  const out: Record<number, number> = {};
  for (const [k, bias] of Object.entries(v as Record<string, unknown>)) {
    const id = Number(k);
    if (!/^\d+$/.test(k) || id > INT32_MAX) throw new SamplingParamError("logit_bias", `key "${k}" is not a token id`);
    if (typeof bias !== "number" || bias < -100 || bias > 100) throw new SamplingParamError("logit_bias", `bias for ${k} must be a number in -100..100`);
    out[id] = bias;
  }
  return out;
}

/** truncate_prompt_tokens for the engine: the gateway has already cut the prompt's ids
 *  (api/openai/engine-prompt.ts), so this only records it; -1 (the model's whole context)
 *  becomes the prompt's length. */
function truncateOf(body: Body, limits: SamplingLimits): number | undefined {
  const t = num(body, "truncate_prompt_tokens", -1, INT32_MAX, { int: true });
  if (t === 0) throw new SamplingParamError("truncate_prompt_tokens", "must be -1 or at least 1");
  return t === -1 ? limits.promptTokens : t;
}

/** Maps an OpenAI request body onto SamplingParams and the gateway's own output options. */
export function samplingPlan(api: OpenAiApi, body: Body, limits: SamplingLimits = {}): SamplingPlan {
  const temperature = num(body, "temperature", 0, 2);
  const topP = num(body, "top_p", 0, 1, { exclusiveMin: true });
  const topK = num(body, "top_k", -1, INT32_MAX, { int: true });
  const minP = num(body, "min_p", 0, 1);
  const frequencyPenalty = num(body, "frequency_penalty", -2, 2);
  const presencePenalty = num(body, "presence_penalty", -2, 2);
  const repetitionPenalty = num(body, "repetition_penalty", 0, 2, { exclusiveMin: true });
  const seed = num(body, "seed", -(2 ** 31), INT32_MAX, { int: true });
  const maxN = limits.maxN ?? 128;
  const n = num(body, "n", 1, maxN, { int: true }) ?? 1;
  // max_completion_tokens supersedes the deprecated max_tokens on chat.
  const maxField = api === "chat" && body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? "max_completion_tokens" : "max_tokens";
  let maxTokens = num(body, maxField, 1, 0xffffffff, { int: true });
  const minTokens = num(body, "min_tokens", 0, 0xffffffff, { int: true }) ?? 0;
  if (limits.maxContextLength !== undefined && limits.promptTokens !== undefined) {
    const room = limits.maxContextLength - limits.promptTokens;
    if (room < 1) throw new SamplingParamError("messages", `the prompt (${limits.promptTokens} tokens) leaves no room in the context window (${limits.maxContextLength})`);
    if (maxTokens === undefined) maxTokens = room; // vLLM's default: fill the context window
    else if (maxTokens > room) {
      throw new SamplingParamError(maxField, `prompt (${limits.promptTokens}) + ${maxField} (${maxTokens}) exceeds the context window (${limits.maxContextLength})`);
    }
  }
  if (maxTokens !== undefined && minTokens > maxTokens) throw new SamplingParamError("min_tokens", `must not exceed ${maxField} (${maxTokens})`);

  let logprobs: number | undefined;
  if (api === "chat") {
    const want = bool(body, "logprobs") ?? false;
    const top = num(body, "top_logprobs", 0, MAX_LOGPROBS, { int: true });
    if (top !== undefined && !want) throw new SamplingParamError("top_logprobs", "requires logprobs: true");
    logprobs = want ? (top ?? 0) : undefined;
  } else {
    logprobs = num(body, "logprobs", 0, MAX_LOGPROBS, { int: true });
  }
  const stream = bool(body, "stream") ?? false;
  const promptLogprobs = num(body, "prompt_logprobs", 0, MAX_LOGPROBS, { int: true });
  // vLLM's check_logprobs: the streamed answer has nowhere to put them.
  if (promptLogprobs !== undefined && stream) throw new SamplingParamError("prompt_logprobs", "is not available when stream is true");
  const streamOptions = body.stream_options as { include_usage?: unknown; continuous_usage_stats?: unknown } | undefined | null;
  if (streamOptions !== undefined && streamOptions !== null && !stream) throw new SamplingParamError("stream_options", "is only allowed with stream: true");
  const includeUsage = stream && streamOptions?.include_usage === true;
  const continuousUsage = stream && streamOptions?.continuous_usage_stats === true;
  // vLLM sends continuous usage only with include_usage; alone it would change nothing.
  if (continuousUsage && !includeUsage) throw new SamplingParamError("stream_options.continuous_usage_stats", "requires stream_options.include_usage: true");
  const stop = stopStrings(body);
  const skipSpecialTokens = bool(body, "skip_special_tokens") ?? true;
  const includeStopStrInOutput = bool(body, "include_stop_str_in_output") ?? false;

  const samplingParams = create(SamplingParamsSchema, {
    temperature,
    topP: topP ?? 1,
    topK: topK === undefined || topK < 0 ? 0 : topK,
    minP: minP ?? 0,
    frequencyPenalty: frequencyPenalty ?? 0,
    presencePenalty: presencePenalty ?? 0,
    repetitionPenalty: repetitionPenalty ?? 1,
    maxTokens,
    minTokens,
    stop,
    stopTokenIds: tokenIds(body, "stop_token_ids"),
    skipSpecialTokens,
    spacesBetweenSpecialTokens: bool(body, "spaces_between_special_tokens") ?? true,
    ignoreEos: bool(body, "ignore_eos") ?? false,
    n,
    logprobs,
    seed,
    includeStopStrInOutput,
    logitBias: logitBias(body),
    constraint: constraintOf(body),
    promptLogprobs,
    truncatePromptTokens: truncateOf(body, limits),
  });
  return {
    samplingParams,
    detokenizer: { stop, skipSpecialTokens, includeStopStrInOutput },
    n,
    logprobs,
    promptLogprobs,
    tokensAsIds: bool(body, "return_tokens_as_token_ids") ?? false,
    stream,
    includeUsage,
    continuousUsage,
  };
}
