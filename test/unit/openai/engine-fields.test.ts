// The accept/refuse table of the OpenAI-on-VllmEngine path: one row per field. Each row sends
// the field alone (plus what it needs) and says what must happen: accepted, or a 400
// unsupported_parameter naming it; a refused field's default value is accepted.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { ENGINE_FIELDS, NESTED_FIELDS, refuseUnsupportedFields, type EngineApi } from "../../../src/api/openai/engine-fields.js";

type Body = Record<string, unknown>;
/** [api, body accepted, body refused (undefined: the field is never refused)]. */
type Row = [EngineApi, Body, Body | undefined];

const C = "chat" as const;
const P = "completions" as const;
const TOOLS = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];

const ROWS: Record<string, Row> = {
  model: [C, { model: "m" }, undefined],
  messages: [C, { messages: [{ role: "user", content: "hi" }] }, undefined],
  prompt: [P, { prompt: "hi" }, undefined],
  stream: [C, { stream: true }, undefined],
  stream_options: [C, { stream: true, stream_options: { include_usage: true } }, undefined],
  n: [C, { n: 3 }, undefined],
  max_tokens: [C, { max_tokens: 5 }, undefined],
  max_completion_tokens: [C, { max_completion_tokens: 5 }, undefined],
  temperature: [C, { temperature: 0.3 }, undefined],
  top_p: [C, { top_p: 0.5 }, undefined],
  frequency_penalty: [C, { frequency_penalty: 1 }, undefined],
  presence_penalty: [C, { presence_penalty: 1 }, undefined],
  seed: [C, { seed: 9 }, undefined],
  stop: [C, { stop: ["x"] }, undefined],
  logit_bias: [C, { logit_bias: { "5": 1 } }, undefined],
  logprobs: [P, { logprobs: 2 }, undefined],
  top_logprobs: [C, { logprobs: true, top_logprobs: 2 }, undefined],
  response_format: [C, { response_format: { type: "json_object" } }, undefined],
  user: [C, { user: "u-1" }, undefined],
  safety_identifier: [C, { safety_identifier: "s-1" }, undefined],
  parallel_tool_calls: [C, { parallel_tool_calls: false }, undefined],
  top_k: [C, { top_k: 5 }, undefined],
  min_p: [C, { min_p: 0.1 }, undefined],
  repetition_penalty: [C, { repetition_penalty: 1.1 }, undefined],
  min_tokens: [C, { min_tokens: 2 }, undefined],
  stop_token_ids: [C, { stop_token_ids: [7] }, undefined],
  ignore_eos: [C, { ignore_eos: true }, undefined],
  include_stop_str_in_output: [C, { include_stop_str_in_output: true }, undefined],
  skip_special_tokens: [C, { skip_special_tokens: false }, undefined],
  spaces_between_special_tokens: [C, { spaces_between_special_tokens: false }, undefined],
  prompt_logprobs: [P, { prompt_logprobs: 1 }, undefined],
  truncate_prompt_tokens: [P, { truncate_prompt_tokens: 10 }, undefined],
  truncation_side: [C, { truncation_side: "right" }, undefined],
  add_special_tokens: [C, { add_special_tokens: true }, undefined],
  structured_outputs: [C, { structured_outputs: { regex: "a+" } }, undefined],
  guided_json: [C, { guided_json: { type: "object" } }, undefined],
  guided_regex: [C, { guided_regex: "a+" }, undefined],
  guided_choice: [C, { guided_choice: ["a", "b"] }, undefined],
  guided_grammar: [C, { guided_grammar: "root ::= \"a\"" }, undefined],
  return_tokens_as_token_ids: [C, { return_tokens_as_token_ids: true }, undefined],
  add_generation_prompt: [C, { add_generation_prompt: false }, undefined],
  continue_final_message: [C, { continue_final_message: true }, undefined],
  documents: [C, { documents: [{ title: "t", text: "x" }] }, undefined],
  chat_template_kwargs: [C, { chat_template_kwargs: { custom: 1, enable_thinking: false } }, { chat_template_kwargs: { enable_thinking: true } }],
  tools: [C, { tools: TOOLS, tool_choice: "none" }, { tools: TOOLS }],
  tool_choice: [C, { tool_choice: "none" }, { tools: TOOLS, tool_choice: "required" }],
  kv_transfer_params: [C, { kv_transfer_params: { do_remote_prefill: true } }, undefined],
  reasoning_effort: [C, {}, { reasoning_effort: "low" }],
  include_reasoning: [C, { include_reasoning: true }, { include_reasoning: false }],
  thinking_token_budget: [C, {}, { thinking_token_budget: 100 }],
  echo: [P, { echo: false }, { echo: true }],
  suffix: [P, {}, { suffix: "end" }],
  best_of: [P, { n: 2, best_of: 2 }, { best_of: 3 }],
  use_beam_search: [C, { use_beam_search: false }, { use_beam_search: true }],
  length_penalty: [C, { length_penalty: 1 }, { length_penalty: 0.5 }],
  early_stopping: [C, { early_stopping: false }, { early_stopping: true }],
  watermarking: [C, {}, { watermarking: true }],
  bad_words: [C, { bad_words: [] }, { bad_words: ["x"] }],
  allowed_token_ids: [C, {}, { allowed_token_ids: [1, 2] }],
  logprob_token_ids: [C, {}, { logprobs: true, logprob_token_ids: [1] }],
  priority: [C, { priority: 0 }, { priority: 5 }],
  request_id: [C, {}, { request_id: "r" }],
  session_id: [C, {}, { session_id: "s" }],
  cache_salt: [C, {}, { cache_salt: "salt" }],
  ec_transfer_params: [C, {}, { ec_transfer_params: {} }],
  vllm_xargs: [C, {}, { vllm_xargs: { a: 1 } }],
  repetition_detection: [C, {}, { repetition_detection: {} }],
  max_repetition_pattern_size: [P, { max_repetition_pattern_size: 0 }, { max_repetition_pattern_size: 3 }],
  min_repetition_pattern_size: [P, { min_repetition_pattern_size: 0 }, { min_repetition_pattern_size: 3 }],
  repetition_min_count: [P, { repetition_min_count: 0 }, { repetition_min_count: 3 }],
  stream_interval: [C, {}, { stream_interval: 4 }],
  logits_processors: [P, {}, { logits_processors: ["x.Y"] }],
  prompt_embeds: [P, {}, { prompt_embeds: "AAAA" }],
  media_io_kwargs: [C, {}, { media_io_kwargs: { image: {} } }],
  mm_processor_kwargs: [C, {}, { mm_processor_kwargs: { a: 1 } }],
  chat_template: [C, {}, { chat_template: "{{ messages }}" }],
  guided_decoding_backend: [C, {}, { guided_decoding_backend: "xgrammar" }],
  guided_whitespace_pattern: [C, {}, { guided_whitespace_pattern: " " }],
  return_token_ids: [C, { return_token_ids: false }, { return_token_ids: true }],
  return_prompt_text: [C, { return_prompt_text: false }, { return_prompt_text: true }],
  return_token_offsets: [C, { return_token_offsets: false }, { return_token_offsets: true }],
  return_mm_kwargs: [C, { return_mm_kwargs: true }, { return_mm_kwargs: false }],
  routed_experts_prompt_start: [C, { routed_experts_prompt_start: 0 }, { routed_experts_prompt_start: 2 }],
  store: [C, { store: false }, { store: true }],
  metadata: [C, {}, { metadata: { a: "b" } }],
  service_tier: [C, {}, { service_tier: "flex" }],
  modalities: [C, { modalities: ["text"] }, { modalities: ["text", "audio"] }],
  audio: [C, {}, { audio: { voice: "alloy", format: "mp3" } }],
  prediction: [C, {}, { prediction: { type: "content", content: "x" } }],
  web_search_options: [C, {}, { web_search_options: {} }],
  verbosity: [C, {}, { verbosity: "low" }],
  prompt_cache_key: [C, {}, { prompt_cache_key: "k" }],
  functions: [C, {}, { functions: [{ name: "f" }] }],
  function_call: [C, { function_call: "none" }, { function_call: "auto" }],
  "stream_options.include_usage": [C, { stream: true, stream_options: { include_usage: true } }, undefined],
  "stream_options.continuous_usage_stats": [C, { stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } }, undefined],
  "structured_outputs.json": [C, { structured_outputs: { json: { type: "object" } } }, undefined],
  "structured_outputs.regex": [C, { structured_outputs: { regex: "a" } }, undefined],
  "structured_outputs.choice": [C, { structured_outputs: { choice: ["a"] } }, undefined],
  "structured_outputs.grammar": [C, { structured_outputs: { grammar: "g" } }, undefined],
  "structured_outputs.json_object": [C, { structured_outputs: { json_object: true } }, undefined],
  "structured_outputs.structural_tag": [C, { structured_outputs: { structural_tag: "{}" } }, undefined],
  "structured_outputs.disable_any_whitespace": [C, { structured_outputs: { disable_any_whitespace: false } }, { structured_outputs: { disable_any_whitespace: true } }],
  "structured_outputs.disable_additional_properties": [C, { structured_outputs: { disable_additional_properties: false } }, { structured_outputs: { disable_additional_properties: true } }],
  "structured_outputs.whitespace_pattern": [C, {}, { structured_outputs: { whitespace_pattern: " " } }],
  "structured_outputs.disable_fallback": [C, { structured_outputs: { disable_fallback: false } }, { structured_outputs: { disable_fallback: true } }],
};

function refusal(api: EngineApi, body: Body): GatewayError | undefined {
  try {
    refuseUnsupportedFields(api, body);
    return undefined;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

const allFields = [...Object.keys(ENGINE_FIELDS), ...Object.entries(NESTED_FIELDS).flatMap(([k, rows]) => Object.keys(rows).map((s) => `${k}.${s}`))];

describe("one row per field", () => {
  it("every field of the table has a row here, and no row names a field the table lacks", () => {
    expect(Object.keys(ROWS).sort()).toEqual([...allFields].sort());
  });

  for (const [field, [api, accepted, refused]] of Object.entries(ROWS)) {
    it(`${field}: ${refused ? "refused unless default" : "accepted"}`, () => {
      expect(refusal(api, accepted)).toBeUndefined();
      if (!refused) return;
      const err = refusal(api, refused);
      expect(err?.status).toBe(400);
      expect(err?.code).toBe("unsupported_parameter");
      const param = field === "tools" || field === "tool_choice" || field.startsWith("structured_outputs.") || field === "chat_template_kwargs" ? undefined : field;
      if (param) expect(err?.param).toBe(param);
      expect(err?.message).toContain(`${err?.param}: not supported for a model served by VllmEngine engines`);
    });
  }
});

describe("the rules around the table", () => {
  it("null and absent pass for every field", () => {
    for (const field of Object.keys(ENGINE_FIELDS)) {
      const api = ENGINE_FIELDS[field]!.api === "completions" ? P : C;
      expect(refusal(api, { [field]: null })).toBeUndefined();
    }
  });

  it("names the field that asks for the parser: tools with tool_choice auto or absent, tool_choice otherwise, the thinking switch", () => {
    expect(refusal(C, { tools: TOOLS })?.param).toBe("tools");
    expect(refusal(C, { tools: TOOLS, tool_choice: "auto" })?.param).toBe("tools");
    expect(refusal(C, { tool_choice: { type: "function", function: { name: "f" } } })?.param).toBe("tool_choice");
    expect(refusal(C, { tools: [], tool_choice: "none" })).toBeUndefined();
    expect(refusal(C, { chat_template_kwargs: { enable_thinking: true } })?.param).toBe("chat_template_kwargs.enable_thinking");
    expect(refusal(C, { chat_template_kwargs: { thinking: true } })?.param).toBe("chat_template_kwargs.thinking");
  });

  it("an unknown field is refused by name, top-level or nested; a field of the other API is refused on this one", () => {
    const unknown = refusal(C, { temperature: 1, frobnicate: true });
    expect(unknown).toMatchObject({ code: "unsupported_parameter", param: "frobnicate" });
    expect(unknown?.message).toMatch(/does not know this field/);
    expect(refusal(C, { stream: true, stream_options: { include_usage: true, x: 1 } })?.param).toBe("stream_options.x");
    expect(refusal(C, { structured_outputs: { regex: "a", nope: 1 } })?.param).toBe("structured_outputs.nope");
    expect(refusal(P, { messages: [] })?.param).toBe("messages");
    expect(refusal(C, { prompt: "x" })?.param).toBe("prompt");
    expect(refusal(C, { suffix: "x" })?.param).toBe("suffix");
  });

  it("the first problem in the body's order is the one reported", () => {
    expect(refusal(C, { priority: 1, bad_words: ["x"] })?.param).toBe("priority");
    expect(refusal(C, { bad_words: ["x"], priority: 1 })?.param).toBe("bad_words");
  });
});

describe("docs/architecture.md shows the same table", () => {
  const doc = readFileSync(new URL("../../../docs/architecture.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## Accept or refuse"));
  for (const field of allFields) {
    it(field, () => {
      expect(section).toContain(`\`${field}\``);
    });
  }
});
