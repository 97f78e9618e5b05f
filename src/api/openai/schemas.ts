// The checks of the OpenAI requests the gateway accepts, hand-written (no zod on the request
// path: building and running a zod schema cost more CPU than the rest of a request). They check
// the types of the fields the gateway reads or that commonly arrive wrong, and let every other
// field through: the engine receives the client's own JSON. Value ranges beyond these
// (temperature bounds, logprobs limits) are the engine's to enforce. The first problem, in
// field order, is reported with the field's path in the OpenAI `param` form.
import type { OpenAiRoute } from "../../backends/openai-bodies.js";

export interface BodyIssue {
  /** messages[0].content, stream_options.include_usage; "" for the body itself. */
  param: string;
  message: string;
}

type Check = (v: unknown, maxN: number) => string | undefined;

const kind = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" && !Number.isFinite(v) ? "a non-finite number" : typeof v);
const expected = (what: string, v: unknown) => (v === undefined ? "is required" : `expected ${what}, received ${kind(v)}`);

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const str: Check = (v) => (typeof v === "string" ? undefined : expected("string", v));
const bool: Check = (v) => (typeof v === "boolean" ? undefined : expected("boolean", v));
const num: Check = (v) => (isNumber(v) ? undefined : expected("number", v));
const int = (min?: number, minMessage = `must be at least ${min}`): Check => (v) => {
  if (!isInt(v)) return isNumber(v) ? "expected an integer" : expected("integer", v);
  if (min !== undefined && v < min) return minMessage;
  return undefined;
};
/** seed is an int64 upstream: any integer, not only the safe range. */
const anyInteger: Check = (v) => (isNumber(v) ? (Number.isInteger(v) ? undefined : "expected an integer") : expected("number", v));
const stop: Check = (v) => (typeof v === "string" || (Array.isArray(v) && v.every((s) => typeof s === "string")) ? undefined : "expected a string or an array of strings");
const intList: Check = (v) => (Array.isArray(v) && v.every(isInt) ? undefined : "expected an array of integers");
const logitBias: Check = (v) => (isObject(v) && Object.values(v).every(isNumber) ? undefined : "expected an object of numbers");

type Field = readonly [name: string, check: Check];

/** Absent or null is fine for every optional field. */
const COMMON: readonly Field[] = [
  ["stream", bool],
  ["stream_options", (v) => (isObject(v) ? undefined : expected("object", v))],
  ["n", (v, maxN) => int(1)(v, maxN) ?? ((v as number) > maxN ? `must be at most ${maxN}` : undefined)],
  ["max_tokens", int(1)],
  ["stop", stop],
  ["seed", anyInteger],
  ["temperature", num],
  ["top_p", num],
  ["top_k", int()],
  ["min_p", num],
  ["presence_penalty", num],
  ["frequency_penalty", num],
  ["repetition_penalty", num],
  ["logit_bias", logitBias],
  ["user", str],
  ["min_tokens", int(0)],
  ["ignore_eos", bool],
  ["stop_token_ids", intList],
  ["prompt_logprobs", int(0)],
];
const CHAT: readonly Field[] = [
  ["max_completion_tokens", int(1)],
  ["logprobs", bool],
  ["top_logprobs", int(0)],
];
const COMPLETION: readonly Field[] = [
  ["echo", bool],
  ["logprobs", int(0)],
  ["best_of", int(1)],
  ["suffix", str],
];
const STREAM_OPTIONS: readonly Field[] = [
  ["include_usage", bool],
  ["continuous_usage_stats", bool],
];

function fields(o: Record<string, unknown>, list: readonly Field[], maxN: number, prefix = ""): BodyIssue | undefined {
  for (const [name, check] of list) {
    const v = o[name];
    if (v === undefined || v === null) continue;
    const message = check(v, maxN);
    if (message !== undefined) return { param: prefix + name, message };
  }
  return undefined;
}

function messages(v: unknown): BodyIssue | undefined {
  if (!Array.isArray(v)) return { param: "messages", message: expected("array", v) };
  if (v.length === 0) return { param: "messages", message: "must contain at least one message" };
  for (let i = 0; i < v.length; i++) {
    const m: unknown = v[i];
    if (!isObject(m)) return { param: `messages[${i}]`, message: expected("object", m) };
    if (typeof m.role !== "string") return { param: `messages[${i}].role`, message: expected("string", m.role) };
    const c = m.content;
    if (c !== undefined && c !== null && typeof c !== "string" && !Array.isArray(c)) {
      return { param: `messages[${i}].content`, message: `expected a string, an array or null, received ${kind(c)}` };
    }
  }
  return undefined;
}

const tokenIds = (v: unknown): boolean => Array.isArray(v) && v.length > 0 && v.every((t) => isInt(t) && t >= 0);

function prompt(v: unknown): BodyIssue | undefined {
  const ok =
    typeof v === "string" ||
    (Array.isArray(v) && v.length > 0 && (v.every((p) => typeof p === "string") || tokenIds(v) || v.every(tokenIds)));
  return ok ? undefined : { param: "prompt", message: v === undefined ? "is required" : "must be a string, an array of strings, an array of token ids, or an array of those" };
}

/** The first problem with a request body (a JSON object), or undefined when it is fine. */
export function checkOpenAiBody(route: OpenAiRoute, body: Record<string, unknown>, maxN: number): BodyIssue | undefined {
  const model = body.model;
  if (typeof model !== "string") return { param: "model", message: expected("string", model) };
  if (model === "") return { param: "model", message: "must not be empty" };
  const common = fields(body, COMMON, maxN);
  if (common) return common;
  if (isObject(body.stream_options)) {
    const so = fields(body.stream_options, STREAM_OPTIONS, maxN, "stream_options.");
    if (so) return so;
  }
  if (route === "/v1/chat/completions") return messages(body.messages) ?? fields(body, CHAT, maxN) ?? generationPrompt(body);
  return prompt(body.prompt) ?? fields(body, COMPLETION, maxN);
}

/** vLLM's check_generation_prompt, word for word: both set to true is a 400 there, and
 *  refused here before any engine work, whatever the engines. */
function generationPrompt(body: Record<string, unknown>): BodyIssue | undefined {
  if (body.continue_final_message !== true || body.add_generation_prompt !== true) return undefined;
  return { param: "continue_final_message", message: "Cannot set both `continue_final_message` and `add_generation_prompt` to True." };
}
