// Validation of vLLM OpenAI request bodies (/v1/completions, /v1/chat/completions) into the
// engine's generation inputs. Wrong types are 400s naming the field, as vLLM's pydantic models.
import type { KvParams } from "./kv-params.js";
import { DEFAULT_MAX_TOKENS, MAX_CONTEXT, MAX_N } from "./spec.js";
import { tokenize } from "./tokens.js";
import { bad, optBool, optInt, OpenAiBadRequest } from "./body-fields.js";
import { parseReplyFields, type ReplyFields } from "./openai-fields.js";
import type { EngineConfig } from "./spec.js";

export { OpenAiBadRequest };

export interface OpenAiRequest {
  route: "/v1/completions" | "/v1/chat/completions";
  /** One prompt per entry (completions accepts a batch); chat has exactly one. */
  prompts: number[][];
  maxTokens: number;
  n: number;
  stream: boolean;
  includeUsage: boolean;
  stop: string[];
  stopTokenIds: number[];
  seed: number | undefined;
  minTokens: number;
  ignoreEos: boolean;
  kvParams: KvParams | undefined;
  /** Each prompt's text when it was text (a scripted reply's source), else "". */
  promptTexts: string[];
  fields: ReplyFields;
}


function isTokenList(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x) && (x as number) >= 0);
}

function promptsOf(body: Record<string, unknown>): number[][] {
  const p = body.prompt;
  if (typeof p === "string") return [tokenize(p)];
  if (isTokenList(p)) return [[...p]];
  if (Array.isArray(p) && p.length > 0) {
    if (p.every((x) => typeof x === "string")) return (p as string[]).map((s) => tokenize(s));
    if (p.every((x) => isTokenList(x))) return (p as number[][]).map((ids) => [...ids]);
  }
  bad("prompt", "must be a string, an array of strings, an array of token ids, or an array of those");
}

/** The sim's chat template: every message's content (a string, or its text parts joined with
 *  " "; none is "") joined with "\n". The Responses and Messages APIs convert their input to
 *  chat messages first, as vLLM does, and render them with this same function, so equivalent
 *  requests on the three APIs get the same prompt ids. */
export function chatMessagesPrompt(msgs: unknown, field = "messages"): number[] {
  return tokenize(chatMessagesText(msgs, field));
}

/** The rendered chat prompt's text (see chatMessagesPrompt). */
export function chatMessagesText(msgs: unknown, field = "messages"): string {
  if (!Array.isArray(msgs) || msgs.length === 0) bad(field, "must be a non-empty array");
  const texts = msgs.map((m, i) => {
    if (typeof m !== "object" || m === null) bad(`${field}[${i}]`, "must be an object");
    const msg = m as Record<string, unknown>;
    if (typeof msg.role !== "string") bad(`${field}[${i}].role`, "must be a string");
    const c = msg.content;
    if (c === undefined || c === null) return "";
    if (typeof c === "string") return c;
    if (Array.isArray(c)) {
      return c
        .map((part, j) => {
          const pt = part as Record<string, unknown> | null;
          if (typeof pt !== "object" || pt === null || typeof pt.type !== "string") bad(`${field}[${i}].content[${j}]`, "must be a content part");
          return pt.type === "text" && typeof pt.text === "string" ? pt.text : "";
        })
        .join(" ");
    }
    bad(`${field}[${i}].content`, "must be a string or an array of content parts");
  });
  return texts.join("\n");
}

function promptTextsOf(route: OpenAiRequest["route"], body: Record<string, unknown>): string[] {
  if (route === "/v1/chat/completions") return [chatMessagesText(body.messages)];
  const p = body.prompt;
  if (typeof p === "string") return [p];
  return Array.isArray(p) ? p.map((x) => (typeof x === "string" ? x : "")) : [""];
}

export function parseOpenAiRequest(route: OpenAiRequest["route"], value: unknown, cfg: EngineConfig): OpenAiRequest {
  const servedModel = cfg.model;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new OpenAiBadRequest("request body must be a JSON object", null);
  }
  const body = value as Record<string, unknown>;
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== "string") bad("model", "must be a string");
    if (body.model !== servedModel) throw new OpenAiBadRequest(`The model \`${body.model}\` does not exist.`, "model", 404);
  }
  const prompts = route === "/v1/completions" ? promptsOf(body) : [chatMessagesPrompt(body.messages)];
  const promptTexts = promptTextsOf(route, body);
  prompts.forEach((p, i) => {
    const field = prompts.length > 1 ? `prompt[${i}]` : route === "/v1/completions" ? "prompt" : "messages";
    if (p.length === 0) bad(field, "the prompt cannot be empty");
    if (p.length > MAX_CONTEXT) bad(field, `prompt of ${p.length} tokens exceeds max_model_len ${MAX_CONTEXT}`);
  });
  const maxTokens =
    (route === "/v1/chat/completions" ? optInt(body, "max_completion_tokens", 1) : undefined) ??
    optInt(body, "max_tokens", 1) ??
    DEFAULT_MAX_TOKENS;
  // vLLM refuses a request whose prompt plus output cannot fit the context window.
  const longest = Math.max(...prompts.map((p) => p.length));
  if (longest + maxTokens > MAX_CONTEXT) bad("max_tokens", `prompt (${longest}) + max_tokens (${maxTokens}) exceeds max_model_len ${MAX_CONTEXT}`);
  const n = optInt(body, "n", 1) ?? 1;
  if (n > MAX_N) bad("n", `must be at most ${MAX_N}`);
  const stream = optBool(body, "stream") ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    const so = body.stream_options as Record<string, unknown>;
    if (typeof so !== "object" || Array.isArray(so)) bad("stream_options", "must be an object");
    if (so.include_usage !== undefined && so.include_usage !== null && typeof so.include_usage !== "boolean") {
      bad("stream_options.include_usage", "must be a boolean");
    }
    includeUsage = so.include_usage === true;
  }
  let stop: string[] = [];
  if (typeof body.stop === "string") stop = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.every((s) => typeof s === "string")) stop = body.stop as string[];
  else if (body.stop !== undefined && body.stop !== null) bad("stop", "must be a string or an array of strings");
  let stopTokenIds: number[] = [];
  if (body.stop_token_ids !== undefined && body.stop_token_ids !== null) {
    if (!Array.isArray(body.stop_token_ids) || !body.stop_token_ids.every((x) => Number.isInteger(x))) {
      bad("stop_token_ids", "must be an array of integers");
    }
    stopTokenIds = body.stop_token_ids as number[];
  }
  const seed = optInt(body, "seed", -(2 ** 31));
  const minTokens = optInt(body, "min_tokens", 0) ?? 0;
  const ignoreEos = optBool(body, "ignore_eos") ?? false;
  const kv = body.kv_transfer_params;
  if (kv !== undefined && kv !== null && (typeof kv !== "object" || Array.isArray(kv))) {
    bad("kv_transfer_params", "must be an object");
  }
  return {
    route, prompts, maxTokens, n, stream, includeUsage, stop, stopTokenIds, seed, minTokens, ignoreEos,
    kvParams: (kv ?? undefined) as KvParams | undefined,
    promptTexts, fields: parseReplyFields(route, body, cfg),
  };
}
