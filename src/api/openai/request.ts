// Checks an OpenAI request (its body read by core/body-text.ts: the size limit, UTF-8): JSON,
// then the fields the gateway reads (schemas.ts), lone surrogates and nesting depth anywhere
// (json-limits.ts). Every failure
// is a 4xx GatewayError that names the field in `param`; the JSON text itself is kept for
// forwarding. One read, one decode, one JSON.parse per request.
import { GatewayError } from "../../core/errors.js";
import type { OpenAiRoute } from "../../backends/openai-bodies.js";
import type { JobPrompt } from "../../pd/job.js";
import { normaliseN } from "../../pd/skip.js";
import { jsonLimitIssue } from "../json-limits.js";
import { checkOpenAiBody } from "./schemas.js";

export interface OpenAiRequest {
  route: OpenAiRoute;
  /** The body as the client sent it (UTF-8 text). */
  text: string;
  /** JSON.parse(text): every field the client sent, unknown ones included. */
  body: Record<string, unknown>;
  model: string;
  stream: boolean;
}

const invalid = (message: string, param: string | null, code = "invalid_request") =>
  new GatewayError(code, 400, message, undefined, param ?? undefined);

/** Zod issue path -> the OpenAI `param` form: messages[0].content, stream_options.include_usage. */
export function paramOf(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out;
}

/** Parses and checks a request body text. Pure. */
export function parseOpenAiRequest(route: OpenAiRoute, text: string, maxN: number): OpenAiRequest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    if (text.trim() === "") throw invalid("request body is empty; expected a JSON object", null, "invalid_json");
    throw invalid(`request body is not valid JSON: ${(err as Error).message}`, null, "invalid_json");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalid("request body must be a JSON object", null);
  }
  const body = json as Record<string, unknown>;
  const issue = checkOpenAiBody(route, body, maxN) ?? jsonLimitIssue(text, body);
  if (issue) throw invalid(`${issue.param || "(body)"}: ${issue.message}`, issue.param || null);
  // max_n bounds the sequences decoded, not just n: a batch of prompts multiplies it.
  const width = fanoutWidth(route, body);
  if (width > maxN) {
    const prompts = Array.isArray(body.prompt) ? body.prompt.length : 1;
    throw invalid(`n: ${prompts} prompts x n=${width / prompts} asks for ${width} sequences, above the limit of ${maxN}`, "n");
  }
  const stream = body.stream === true;
  // vLLM refuses this too, but only after the prefill leg would have run for nothing.
  if (!stream && body.stream_options !== undefined && body.stream_options !== null) {
    throw invalid("stream_options: only allowed when stream is true", "stream_options");
  }
  return { route, text, body, model: body.model as string, stream };
}

/** How many sequences a request asks for: n, times the prompts of a batched completions
 *  request. Each sequence would pull the single-consumer handoff, so a batch is fan-out too. */
export function fanoutWidth(route: OpenAiRoute, body: Record<string, unknown>): number {
  const n = normaliseN(typeof body.n === "number" ? body.n : undefined);
  return n * (route === "/v1/completions" ? promptCount(body.prompt) : 1);
}

function promptCount(prompt: unknown): number {
  if (!Array.isArray(prompt) || prompt.length === 0) return 1;
  // A list of token ids is one prompt; a list of strings or of token-id lists is a batch.
  return prompt.every((p) => typeof p === "number") ? 1 : prompt.length;
}

/** The prompt for the job (api/job.ts): token ids for a prompt of ids; else text: the prompt,
 *  a batch as its JSON, or a chat's message texts (string contents and text parts) joined.
 *  For prefix-affinity policies and the decider's length estimate. Pure. */
export function jobPromptOf(p: OpenAiRequest): JobPrompt {
  const b = p.body;
  if (typeof b.prompt === "string") return { text: b.prompt };
  if (Array.isArray(b.prompt)) {
    return b.prompt.length > 0 && b.prompt.every((x) => typeof x === "number") ? { tokens: b.prompt as number[] } : { text: JSON.stringify(b.prompt) };
  }
  if (Array.isArray(b.messages)) return { text: b.messages.map(messageText).join("\n") };
  return { text: "" };
}

function messageText(m: unknown): string {
  if (typeof m !== "object" || m === null) return "";
  const content = (m as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: unknown) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : "")).join("");
}
