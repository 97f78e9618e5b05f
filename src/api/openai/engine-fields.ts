// Accept or refuse, never ignore (ARCHITECTURE decision 15): every field an OpenAI
// chat/completions request may carry to a model served by VllmEngine engines, in ONE table.
// A field is either honoured (mapped onto the GenerateRequest, or applied by the gateway,
// which tokenizes and builds the answer on this path) or refused with a 400
// `unsupported_parameter` naming it whenever it carries anything but its default (absent and
// null always pass). A field the table does not know is refused too: vLLM's OpenAI server
// ignores unknown fields with a warning, but a client whose field was dropped gets a 200 that
// is not what it asked for. Pure; docs/architecture.md shows the table and a unit test keeps
// the two in step.
import { GatewayError } from "../../core/errors.js";

export type EngineApi = "chat" | "completions";

type Body = Record<string, unknown>;

export type FieldHandling =
  /** Honoured: `to` says where (a SamplingParams field, or the gateway step). */
  | { kind: "mapped"; to: string }
  /** Accepted with no effect on the output, as vLLM does; `why` says why that is honest. */
  | { kind: "no_effect"; why: string }
  /** Refused unless `passes` (absent and null always pass); `why` goes into the message. */
  | { kind: "refused"; passes: (v: unknown, body: Body) => boolean; default: string; why: string };

export interface FieldRow {
  api: EngineApi | "both";
  handling: FieldHandling;
}

const mapped = (to: string, api: FieldRow["api"] = "both"): FieldRow => ({ api, handling: { kind: "mapped", to } });
const noEffect = (why: string, api: FieldRow["api"] = "both"): FieldRow => ({ api, handling: { kind: "no_effect", why } });
const refused = (why: string, dflt: unknown, api: FieldRow["api"] = "both"): FieldRow => ({
  api,
  handling: { kind: "refused", passes: (v) => sameJson(v, dflt), default: dflt === null ? "null" : JSON.stringify(dflt), why },
});
const refusedIf = (why: string, dflt: string, passes: (v: unknown, body: Body) => boolean, api: FieldRow["api"] = "both"): FieldRow => ({
  api,
  handling: { kind: "refused", passes, default: dflt, why },
});

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === "object" && a !== null && JSON.stringify(a) === JSON.stringify(b));
}

const DEPRECATED = "the deprecated form; vLLM does not take it either: send tools / tool_choice";
const NO_PROTO = "the VllmEngine GenerateRequest has no field for it";

/** Top-level fields. Order: OpenAI's own, then vLLM's extensions, then refusals. */
export const ENGINE_FIELDS: Readonly<Record<string, FieldRow>> = {
  model: mapped("routing: selects the model's engines"),
  messages: mapped("gateway: rendered with the model's chat template, then tokenized", "chat"),
  prompt: mapped("gateway: tokenized (or token ids sent as they are)", "completions"),
  stream: mapped("GenerateRequest.stream; the gateway writes the SSE"),
  stream_options: mapped("gateway: see stream_options.*"),
  n: mapped("SamplingParams.n"),
  max_tokens: mapped("SamplingParams.max_tokens (context-window checked)"),
  max_completion_tokens: mapped("SamplingParams.max_tokens (wins over max_tokens)", "chat"),
  temperature: mapped("SamplingParams.temperature"),
  top_p: mapped("SamplingParams.top_p"),
  frequency_penalty: mapped("SamplingParams.frequency_penalty"),
  presence_penalty: mapped("SamplingParams.presence_penalty"),
  seed: mapped("SamplingParams.seed"),
  stop: mapped("SamplingParams.stop, and the gateway's detokenizer cuts the text"),
  logit_bias: mapped("SamplingParams.logit_bias"),
  logprobs: mapped("SamplingParams.logprobs; the gateway decodes the tokens (streamed and not)"),
  top_logprobs: mapped("SamplingParams.logprobs", "chat"),
  response_format: mapped("SamplingParams.constraint (json_object, json_schema, structural_tag; text: none)"),
  user: noEffect("identifies the end user to OpenAI; vLLM ignores it too"),
  safety_identifier: noEffect("identifies the end user to OpenAI (user's successor); no effect on generation"),
  parallel_tool_calls: mapped("gateway: false keeps the first call (and maxItems 1 under tool_choice \"required\")", "chat"),
  // vLLM's sampling extensions.
  top_k: mapped("SamplingParams.top_k"),
  min_p: mapped("SamplingParams.min_p"),
  repetition_penalty: mapped("SamplingParams.repetition_penalty"),
  min_tokens: mapped("SamplingParams.min_tokens"),
  stop_token_ids: mapped("SamplingParams.stop_token_ids"),
  ignore_eos: mapped("SamplingParams.ignore_eos"),
  include_stop_str_in_output: mapped("SamplingParams.include_stop_str_in_output and the gateway's detokenizer"),
  skip_special_tokens: mapped("SamplingParams.skip_special_tokens and the gateway's detokenizer"),
  spaces_between_special_tokens: mapped("SamplingParams.spaces_between_special_tokens"),
  prompt_logprobs: mapped("SamplingParams.prompt_logprobs (not streamed, as vLLM); the answer's prompt_logprobs"),
  truncate_prompt_tokens: mapped("gateway: the prompt's ids are truncated before the context check; SamplingParams.truncate_prompt_tokens"),
  truncation_side: mapped("gateway: which end truncate_prompt_tokens keeps", "chat"),
  add_special_tokens: mapped("gateway: the tokenizer's special tokens (BOS) when encoding the prompt"),
  structured_outputs: mapped("SamplingParams.constraint: see structured_outputs.*"),
  guided_json: mapped("SamplingParams.constraint json_schema (vLLM's older form)"),
  guided_regex: mapped("SamplingParams.constraint regex (vLLM's older form)"),
  guided_choice: mapped("SamplingParams.constraint choice (vLLM's older form)"),
  guided_grammar: mapped("SamplingParams.constraint grammar (vLLM's older form)"),
  return_tokens_as_token_ids: mapped("gateway: logprobs tokens written as \"token_id:<id>\""),
  add_generation_prompt: mapped("gateway: chat template variable", "chat"),
  continue_final_message: mapped("gateway: chat template variable", "chat"),
  documents: mapped("gateway: chat template variable", "chat"),
  chat_template_kwargs: mapped("gateway: chat template variables (see chat_template_kwargs.*)", "chat"),
  tools: mapped("gateway: rendered into the prompt; the reply is read by the model's tool parser (docs/tools.md)", "chat"),
  tool_choice: mapped("gateway: \"none\" / \"auto\" choose parsing; \"required\", a named function and allowed_tools become SamplingParams.constraint", "chat"),
  kv_transfer_params: noEffect("dropped, as on every path: the gateway owns the KV handoff between its engines (docs/pd.md)"),
  // Refused: nothing on this path can honour them.
  reasoning_effort: noEffect("vLLM hands it to chat templates that read it (gpt-oss); the templates this gateway renders for its parsers' models do not read it", "chat"),
  include_reasoning: mapped("gateway: false drops the reasoning the model's reasoning parser split off", "chat"),
  thinking_token_budget: refused(NO_PROTO, null, "chat"),
  echo: refused("the gateway does not return the prompt in the answer", false),
  suffix: refused(NO_PROTO, null, "completions"),
  best_of: refusedIf("vLLM's V1 engine removed best_of; only best_of equal to n is accepted", "n", (v, body) => v === (body.n ?? 1), "completions"),
  use_beam_search: refused(NO_PROTO, false),
  length_penalty: refused("it applies to beam search only, which is refused", 1),
  early_stopping: refused("it applies to beam search only, which is refused", false),
  watermarking: refused(NO_PROTO, null),
  bad_words: refused(NO_PROTO, []),
  allowed_token_ids: refused(NO_PROTO, null),
  logprob_token_ids: refused(NO_PROTO, null),
  priority: refused(NO_PROTO, 0),
  request_id: refused("the gateway names the request; send the x-request-id header instead", null),
  session_id: refused(NO_PROTO, null),
  cache_salt: refused(NO_PROTO, null),
  ec_transfer_params: refused(NO_PROTO, null),
  vllm_xargs: refused(NO_PROTO, null),
  repetition_detection: refused(NO_PROTO, null),
  max_repetition_pattern_size: refused(NO_PROTO, 0, "completions"),
  min_repetition_pattern_size: refused(NO_PROTO, 0, "completions"),
  repetition_min_count: refused(NO_PROTO, 0, "completions"),
  stream_interval: refused("the gateway sends each engine frame as it comes", null),
  logits_processors: refused(NO_PROTO, null, "completions"),
  prompt_embeds: refused("the gateway sends token ids only", null, "completions"),
  media_io_kwargs: refused("the gateway renders text only on this path", null, "chat"),
  mm_processor_kwargs: refused("the gateway renders text only on this path", null, "chat"),
  chat_template: refused("the model's own template is used", null, "chat"),
  guided_decoding_backend: refused(NO_PROTO, null),
  guided_whitespace_pattern: refused(NO_PROTO, null),
  return_token_ids: refused("not implemented by the gateway yet", false),
  return_prompt_text: refused("not implemented by the gateway yet", false, "chat"),
  return_token_offsets: refused("a render-endpoint field", false, "chat"),
  return_mm_kwargs: refused("a render-endpoint field", true, "chat"),
  routed_experts_prompt_start: refused(NO_PROTO, 0, "chat"),
  // OpenAI fields vLLM does not implement either.
  store: refused("the gateway stores no completions", false),
  metadata: refused("the gateway stores no completions", null),
  service_tier: refused("the gateway has no service tiers", null),
  modalities: refusedIf("only text output exists on this path", "[\"text\"]", (v) => sameJson(v, ["text"]), "chat"),
  audio: refused("only text output exists on this path", null, "chat"),
  prediction: refused(NO_PROTO, null, "chat"),
  web_search_options: refused("the gateway has no web search", null, "chat"),
  verbosity: refused(NO_PROTO, null, "chat"),
  prompt_cache_key: refused(NO_PROTO, null),
  functions: refused(`${DEPRECATED}`, null, "chat"),
  function_call: refusedIf(DEPRECATED, "\"none\"", (v) => v === "none", "chat"),
};

/** Keys of the objects whose members the gateway reads one by one. */
export const NESTED_FIELDS: Readonly<Record<string, Readonly<Record<string, FieldRow>>>> = {
  stream_options: {
    include_usage: mapped("gateway: the usage chunk before [DONE]"),
    continuous_usage_stats: mapped("gateway: usage on every chunk (with include_usage, as vLLM)"),
  },
  structured_outputs: {
    json: mapped("SamplingParams.constraint json_schema"),
    regex: mapped("SamplingParams.constraint regex"),
    choice: mapped("SamplingParams.constraint choice"),
    grammar: mapped("SamplingParams.constraint grammar"),
    json_object: mapped("SamplingParams.constraint json_object"),
    structural_tag: mapped("SamplingParams.constraint structural_tag"),
    disable_any_whitespace: refused(NO_PROTO, false),
    disable_additional_properties: refused(NO_PROTO, false),
    whitespace_pattern: refused(NO_PROTO, null),
    disable_fallback: refused(NO_PROTO, false),
  },
};

const refusal = (param: string, why: string) =>
  new GatewayError("unsupported_parameter", 400, `${param}: not supported for a model served by VllmEngine engines: ${why}`, undefined, param);

function check(param: string, row: FieldRow | undefined, api: EngineApi, v: unknown, body: Body): void {
  if (v === undefined || v === null) return;
  if (!row || (row.api !== "both" && row.api !== api)) {
    throw refusal(param, `the gateway does not know this field${row ? ` on ${api === "chat" ? "chat completions" : "completions"}` : ""}, and refuses it rather than ignore it`);
  }
  const h = row.handling;
  if (h.kind === "refused" && !h.passes(v, body)) throw refusal(param, `${h.why} (accepted: ${h.default})`);
}

/** Throws the 400 `unsupported_parameter` for the first field (in the body's order) that this
 *  path cannot honour. */
export function refuseUnsupportedFields(api: EngineApi, body: Body): void {
  for (const [key, v] of Object.entries(body)) {
    check(key, ENGINE_FIELDS[key], api, v, body);
    const nested = NESTED_FIELDS[key];
    if (nested && typeof v === "object" && v !== null && !Array.isArray(v)) {
      for (const [sub, sv] of Object.entries(v)) check(`${key}.${sub}`, nested[sub], api, sv, body);
    }
  }
}
