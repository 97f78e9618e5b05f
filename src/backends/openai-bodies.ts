// The OpenAI HTTP legs' bodies (pd-reference 6): the prefill sanitiser, the decode (or
// regular) body - the client's bytes plus one member - and the harvest of the prefill
// response's kv_transfer_params. Pure: the transport (openai-http-transport.ts) does the I/O.
import { memberValueText, withMember } from "./json-members.js";

export type OpenAiRoute = "/v1/chat/completions" | "/v1/completions";

export const KV_PARAMS_KEY = "kv_transfer_params";

/** The prefill leg's body: one non-streamed sample capped at one output token (a
 *  length-capped finish is what makes the engine return its handoff), the connector's tag,
 *  every other field (messages, temperature, seed, stop, ...) as the client sent it. */
export function sanitisePrefillBody(route: OpenAiRoute, body: Record<string, unknown>, kvTag: string | undefined): Record<string, unknown> {
  const p: Record<string, unknown> = { ...body };
  p.stream = false;
  delete p.stream_options;
  if ("n" in p) p.n = 1;
  delete p.min_tokens;
  if (route === "/v1/chat/completions" && p.max_completion_tokens !== undefined && p.max_completion_tokens !== null) {
    p.max_completion_tokens = 1;
    delete p.max_tokens;
  } else {
    p.max_tokens = 1;
  }
  // Only the gateway sets KV params: a client's would make an engine pull from where it says.
  delete p[KV_PARAMS_KEY];
  if (kvTag !== undefined) p[KV_PARAMS_KEY] = JSON.parse(kvTag) as unknown;
  return p;
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
