// OpenAI chat/completions request fields -> VllmEngine SamplingParams, field by field, with the
// ranges vLLM's OpenAI server enforces. Errors name the OpenAI field (for a 400 with `param`).
//
// Stop strings are sent to the engine AND applied by the gateway: the engine stops generating
// (no tokens wasted past the stop, and its servicer detokenizes only when stop is set), but the
// engine returns token ids, so the client's text, cut at the stop, is the gateway's detokenizer's.
import { create } from "@bufbuild/protobuf";
import { ChoiceConstraintSchema, SamplingParamsSchema, type SamplingParams } from "../gen/vllm_engine_pb.js";
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
  stream: boolean;
  includeUsage: boolean;
}

export interface SamplingLimits {
  /** GetModelInfo max_context_length: bounds prompt + max_tokens. */
  maxContextLength?: number;
  promptTokens?: number;
  /** vLLM's n cap (default 128). */
  maxN?: number;
}

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

type Constraint = SamplingParams["constraint"];

/** response_format and vLLM's guided_* extensions -> the proto's constraint oneof (at most one). */
function constraint(body: Body): Constraint {
  const found: [string, Constraint][] = [];
  const rf = body.response_format;
  if (rf !== undefined && rf !== null) {
    if (typeof rf !== "object") throw new SamplingParamError("response_format", "must be an object");
    const { type, json_schema } = rf as { type?: unknown; json_schema?: { schema?: unknown } };
    if (type === "json_object") found.push(["response_format", { case: "jsonObject", value: true }]);
    else if (type === "json_schema") {
      const schema = json_schema?.schema;
      if (typeof schema !== "object" || schema === null) throw new SamplingParamError("response_format.json_schema.schema", "must be a JSON Schema object");
      found.push(["response_format", { case: "jsonSchema", value: JSON.stringify(schema) }]);
    } else if (type !== "text") throw new SamplingParamError("response_format.type", "must be one of text, json_object, json_schema");
  }
  const guided: [string, (v: unknown) => Constraint][] = [
    ["guided_json", (v) => ({ case: "jsonSchema", value: typeof v === "string" ? v : JSON.stringify(v) })],
    ["guided_regex", (v) => ({ case: "regex", value: String(v) })],
    ["guided_grammar", (v) => ({ case: "grammar", value: String(v) })],
    ["guided_choice", (v) => {
      if (!Array.isArray(v) || !v.every((c) => typeof c === "string")) throw new SamplingParamError("guided_choice", "must be an array of strings");
      return { case: "choice", value: create(ChoiceConstraintSchema, { choices: v as string[] }) } as Constraint;
    }],
  ];
  for (const [field, make] of guided) if (body[field] !== undefined && body[field] !== null) found.push([field, make(body[field])]);
  if (found.length > 1) throw new SamplingParamError(found[1]![0], `cannot be combined with ${found[0]![0]}`);
  return found[0]?.[1] ?? { case: undefined };
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
    const top = num(body, "top_logprobs", 0, 20, { int: true });
    if (top !== undefined && !want) throw new SamplingParamError("top_logprobs", "requires logprobs: true");
    logprobs = want ? (top ?? 0) : undefined;
  } else {
    logprobs = num(body, "logprobs", 0, 5, { int: true });
  }
  const stream = bool(body, "stream") ?? false;
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined | null;
  if (streamOptions !== undefined && streamOptions !== null && !stream) throw new SamplingParamError("stream_options", "is only allowed with stream: true");
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
    constraint: constraint(body),
  });
  return {
    samplingParams,
    detokenizer: { stop, skipSpecialTokens, includeStopStrInOutput },
    n,
    logprobs,
    stream,
    includeUsage: stream && streamOptions?.include_usage === true,
  };
}
