// The OpenAI HTTP legs' bodies (pd-reference 6): the prefill leg's body - the client's
// request with the leg's sampling (the prefill cap, pd/prefill-cap.ts) written over it - the
// decode (or regular) body - the client's bytes plus one member - and the harvest of the
// prefill response's kv_transfer_params. Pure: the transport (openai-http-transport.ts) does
// the I/O.
import type { LegSampling } from "../core/leg-transport.js";
import { memberValueText, withMember } from "./json-members.js";

export type OpenAiRoute = "/v1/chat/completions" | "/v1/completions";
/** Every generation route of `vllm serve` the gateway forwards: OpenAI chat and completions,
 *  the Responses API and the Anthropic Messages API (vLLM PRs 37424, 37535: both take and
 *  return top-level kv_transfer_params). */
export type EngineHttpRoute = OpenAiRoute | "/v1/responses" | "/v1/messages";

export const KV_PARAMS_KEY = "kv_transfer_params";

/** The client's body with a leg's sampling in vLLM's OpenAI fields (an empty or default value
 *  is the member left out), the connector's tag, and every other field (messages, prompt,
 *  temperature, seed, response_format, ...) as the client sent it. */
export function bodyWithSampling(route: EngineHttpRoute, body: Record<string, unknown>, s: LegSampling, kvTag: string | undefined): Record<string, unknown> {
  if (route === "/v1/responses") return responsesWithSampling(body, s, kvTag);
  if (route === "/v1/messages") return messagesWithSampling(body, s, kvTag);
  const p: Record<string, unknown> = { ...body };
  const chat = route === "/v1/chat/completions";
  // On chat, max_completion_tokens supersedes the deprecated max_tokens (vLLM reads it first).
  if (chat && p.max_completion_tokens !== undefined && p.max_completion_tokens !== null) {
    p.max_completion_tokens = s.maxTokens;
    delete p.max_tokens;
  } else {
    p.max_tokens = s.maxTokens;
  }
  setOrDelete(p, "min_tokens", s.minTokens !== 0 ? s.minTokens : undefined);
  if ("n" in p || s.n !== 1) p.n = s.n;
  setOrDelete(p, "ignore_eos", s.ignoreEos ? true : undefined);
  setOrDelete(p, "stop", s.stop.length > 0 ? [...s.stop] : undefined);
  setOrDelete(p, "stop_token_ids", s.stopTokenIds.length > 0 ? [...s.stopTokenIds] : undefined);
  if (chat) {
    setOrDelete(p, "logprobs", s.logprobs !== undefined ? true : undefined);
    setOrDelete(p, "top_logprobs", s.logprobs);
  } else {
    setOrDelete(p, "logprobs", s.logprobs);
  }
  setOrDelete(p, "prompt_logprobs", s.promptLogprobs);
  p.stream = s.stream;
  if (!s.stream) delete p.stream_options;
  return withKvTag(p, kvTag);
}

/** Only the gateway sets KV params: a client's would make an engine pull from where it says. */
function withKvTag(p: Record<string, unknown>, kvTag: string | undefined): Record<string, unknown> {
  delete p[KV_PARAMS_KEY];
  if (kvTag !== undefined) p[KV_PARAMS_KEY] = JSON.parse(kvTag) as unknown;
  return p;
}

/** vLLM's ResponsesRequest: `max_output_tokens`, `stop` and `ignore_eos` (a vLLM extension);
 *  no n, min_tokens or stop_token_ids; output logprobs through `top_logprobs` plus `include`.
 *  The gateway keeps the conversation state, so an engine stores nothing. */
function responsesWithSampling(body: Record<string, unknown>, s: LegSampling, kvTag: string | undefined): Record<string, unknown> {
  const p: Record<string, unknown> = { ...body, max_output_tokens: s.maxTokens, store: false };
  setOrDelete(p, "ignore_eos", s.ignoreEos ? true : undefined);
  setOrDelete(p, "stop", s.stop.length > 0 ? [...s.stop] : undefined);
  if (s.logprobs === undefined) {
    delete p.top_logprobs;
    if (Array.isArray(p.include)) p.include = p.include.filter((x) => x !== "message.output_text.logprobs");
  }
  p.stream = s.stream;
  return withKvTag(p, kvTag);
}

/** vLLM's AnthropicMessagesRequest: `max_tokens` and `stop_sequences`. It has no ignore_eos
 *  (unknown fields are dropped), so a prefill leg whose one token is EOS finishes stopped and
 *  NIXL keeps no handoff: decode then recomputes (docs/responses-and-messages.md). */
function messagesWithSampling(body: Record<string, unknown>, s: LegSampling, kvTag: string | undefined): Record<string, unknown> {
  const p: Record<string, unknown> = { ...body, max_tokens: s.maxTokens };
  setOrDelete(p, "stop_sequences", s.stop.length > 0 ? [...s.stop] : undefined);
  p.stream = s.stream;
  return withKvTag(p, kvTag);
}

function setOrDelete(p: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) delete p[key];
  else p[key] = value;
}

/** The prefill response's top-level kv_transfer_params as raw JSON text, verbatim; undefined
 *  when missing, null, not an object, or the body is not a JSON object. */
export function harvestKvParams(responseText: string): string | undefined {
  try {
    JSON.parse(responseText);
  } catch {
    return undefined;
  }
  const v = memberValueText(responseText, KV_PARAMS_KEY);
  return v !== undefined && v.startsWith("{") ? v : undefined;
}

/** The decode (or aggregated) leg's body: the client's JSON text with any client
 *  kv_transfer_params dropped and the gateway's put first. Other members keep their bytes.
 *  With `parsed` (JSON.parse of the text) the text is not rescanned when the client sent no
 *  kv_transfer_params: the text as is, or the member spliced in after its opening brace. */
export function buildEngineBody(clientText: string, paramsJson: string | undefined, parsed?: Record<string, unknown>): string {
  if (parsed !== undefined && !Object.hasOwn(parsed, KV_PARAMS_KEY)) {
    if (paramsJson === undefined) return clientText;
    const open = clientText.indexOf("{");
    let empty = true;
    for (const k in parsed) {
      if (Object.hasOwn(parsed, k)) {
        empty = false;
        break;
      }
    }
    return `${clientText.slice(0, open)}{"${KV_PARAMS_KEY}":${paramsJson}${empty ? "" : ","}${clientText.slice(open + 1)}`;
  }
  const out = withMember(clientText, KV_PARAMS_KEY, paramsJson);
  if (out === undefined) throw new Error("client body is not a JSON object");
  return out;
}
