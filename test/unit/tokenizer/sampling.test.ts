// OpenAI body -> SamplingParams, and GenerateResponse frames -> OpenAI objects / SSE.
import { create } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { GenerateResponseSchema, type GenerateResponse } from "../../../src/gen/vllm_engine_pb.js";
import { SamplingParamError } from "../../../src/tokenizer/errors.js";
import { OpenAiResponseBuilder } from "../../../src/tokenizer/openai-frames.js";
import { samplingPlan } from "../../../src/tokenizer/sampling.js";
import type { EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { qwen3Tokenizer } from "./qwen3-files.js";

describe("samplingPlan: field by field", () => {
  const table: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ["defaults", {}, { topP: 1, topK: 0, repetitionPenalty: 1, n: 1, skipSpecialTokens: true }],
    ["temperature/top_p/top_k/min_p", { temperature: 0.5, top_p: 0.9, top_k: 40, min_p: 0.05 }, { temperature: 0.5, topK: 40 }],
    ["top_k -1 disables", { top_k: -1 }, { topK: 0 }],
    ["penalties", { frequency_penalty: 0.5, presence_penalty: -0.5, repetition_penalty: 1.2 }, { frequencyPenalty: 0.5, presencePenalty: -0.5 }],
    ["seed, n", { seed: 7, n: 3 }, { seed: 7, n: 3 }],
    ["max_tokens", { max_tokens: 20, min_tokens: 5 }, { maxTokens: 20, minTokens: 5 }],
    ["stop string and list", { stop: "END" }, { stop: ["END"] }],
    ["stop_token_ids, ignore_eos", { stop_token_ids: [1, 2], ignore_eos: true }, { stopTokenIds: [1, 2], ignoreEos: true }],
    ["logit_bias", { logit_bias: { "42": -100, "7": 5 } }, { logitBias: { 42: -100, 7: 5 } }],
    ["include_stop_str_in_output, skip_special_tokens", { include_stop_str_in_output: true, skip_special_tokens: false }, { includeStopStrInOutput: true, skipSpecialTokens: false }],
    ["json_object", { response_format: { type: "json_object" } }, { constraint: { case: "jsonObject", value: true } }],
    ["json_schema", { response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } } }, { constraint: { case: "jsonSchema", value: '{"type":"object"}' } }],
    ["guided_regex", { guided_regex: "a+" }, { constraint: { case: "regex", value: "a+" } }],
    ["structured_outputs.choice", { structured_outputs: { choice: ["a", "b"] } }, { constraint: { case: "choice", value: { choices: ["a", "b"] } } }],
    ["prompt_logprobs", { prompt_logprobs: 3 }, { promptLogprobs: 3 }],
    ["truncate_prompt_tokens", { truncate_prompt_tokens: 8 }, { truncatePromptTokens: 8 }],
  ];
  for (const [name, body, want] of table) {
    it(name, () => {
      expect(samplingPlan("chat", body).samplingParams).toMatchObject(want);
    });
  }

  it("max_completion_tokens wins on chat; the context window bounds it and fills the default", () => {
    expect(samplingPlan("chat", { max_tokens: 5, max_completion_tokens: 9 }).samplingParams.maxTokens).toBe(9);
    expect(samplingPlan("chat", {}, { maxContextLength: 100, promptTokens: 40 }).samplingParams.maxTokens).toBe(60);
    expect(() => samplingPlan("chat", { max_tokens: 61 }, { maxContextLength: 100, promptTokens: 40 })).toThrow(/max_tokens/);
  });

  it("logprobs: chat uses top_logprobs, completions an integer", () => {
    expect(samplingPlan("chat", { logprobs: true, top_logprobs: 3 }).samplingParams.logprobs).toBe(3);
    expect(samplingPlan("chat", { logprobs: true }).samplingParams.logprobs).toBe(0);
    expect(samplingPlan("chat", {}).samplingParams.logprobs).toBeUndefined();
    expect(samplingPlan("completions", { logprobs: 2 }).samplingParams.logprobs).toBe(2);
  });

  it("stream_options.include_usage", () => {
    expect(samplingPlan("chat", { stream: true, stream_options: { include_usage: true } }).includeUsage).toBe(true);
  });

  const errors: [Record<string, unknown>, string][] = [
    [{ temperature: 3 }, "temperature"],
    [{ temperature: "hot" }, "temperature"],
    [{ top_p: 0 }, "top_p"],
    [{ n: 0 }, "n"],
    [{ max_tokens: 0 }, "max_tokens"],
    [{ max_tokens: 2, min_tokens: 3 }, "min_tokens"],
    [{ stop: [1] }, "stop"],
    [{ stop_token_ids: [-1] }, "stop_token_ids"],
    [{ logit_bias: { abc: 1 } }, "logit_bias"],
    [{ seed: 1.5 }, "seed"],
    [{ top_logprobs: 2 }, "top_logprobs"],
    [{ response_format: { type: "xml" } }, "response_format.type"],
    [{ response_format: { type: "json_object" }, guided_regex: "a" }, "guided_regex"],
    [{ stream_options: { include_usage: true } }, "stream_options"],
    [{ stream: true, prompt_logprobs: 1 }, "prompt_logprobs"],
    [{ prompt_logprobs: 21 }, "prompt_logprobs"],
    [{ prompt_logprobs: -1 }, "prompt_logprobs"],
    [{ logprobs: true, top_logprobs: 21 }, "top_logprobs"],
    [{ stream: true, stream_options: { continuous_usage_stats: true } }, "stream_options.continuous_usage_stats"],
    [{ truncate_prompt_tokens: 0 }, "truncate_prompt_tokens"],
  ];
  for (const [body, field] of errors) {
    it(`rejects ${JSON.stringify(body)} naming ${field}`, () => {
      let err: unknown;
      try {
        samplingPlan("chat", body);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SamplingParamError);
      expect((err as SamplingParamError).field).toBe(field);
    });
  }
});

describe("OpenAiResponseBuilder", () => {
  let tok: EdgeTokenizer;
  beforeAll(async () => {
    tok = await qwen3Tokenizer();
  });
  const meta = { id: "chatcmpl-1", created: 1, model: "qwen3" };
  const chunk = (index: number, tokenIds: number[], completionTokens: number): GenerateResponse =>
    create(GenerateResponseSchema, { response: { case: "chunk", value: { index, tokenIds, promptTokens: 10, completionTokens, cachedTokens: 4 } } });
  const complete = (index: number, outputIds: number[], finishReason: string): GenerateResponse =>
    create(GenerateResponseSchema, { response: { case: "complete", value: { index, outputIds, finishReason, promptTokens: 10, completionTokens: outputIds.length, cachedTokens: 4 } } });

  it("non-streaming chat with n=2: choices, finish reasons, usage with cached tokens", () => {
    const plan = samplingPlan("chat", { n: 2 });
    const b = new OpenAiResponseBuilder({ api: "chat", ...meta }, plan, tok);
    const a = tok.encode("Hello 😀", { addSpecialTokens: false });
    const c = tok.encode("中文", { addSpecialTokens: false });
    b.onFrame(complete(1, c, "length"));
    b.onFrame(complete(0, [...a, 151645], "stop"));
    expect(b.result()).toMatchObject({
      object: "chat.completion",
      choices: [
        { index: 0, message: { role: "assistant", content: "Hello 😀" }, finish_reason: "stop" },
        { index: 1, message: { content: "中文" }, finish_reason: "length" },
      ],
      usage: { prompt_tokens: 10, completion_tokens: a.length + 1 + c.length, prompt_tokens_details: { cached_tokens: 4 } },
    });
  });

  it("streaming: role first, deltas without U+FFFD, gateway stop finishes the choice, usage chunk and [DONE]", () => {
    const plan = samplingPlan("chat", { stream: true, stop: ["END"], stream_options: { include_usage: true } });
    const b = new OpenAiResponseBuilder({ api: "chat", ...meta }, plan, tok);
    const ids = tok.encode("😀 ok END more", { addSpecialTokens: false });
    const lines = ids.flatMap((id) => b.onFrame(chunk(0, [id], 1)));
    expect(b.allFinished).toBe(true);
    lines.push(...b.onFrame(complete(0, ids.slice(-1), "length")), ...b.finishStream());
    const objs = lines.filter((l) => l !== "data: [DONE]\n\n").map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
    expect(lines.at(-1)).toBe("data: [DONE]\n\n");
    const choices = objs.flatMap((o) => o.choices as Record<string, unknown>[]);
    expect(choices[0]).toMatchObject({ delta: { role: "assistant" } });
    expect(choices.map((c) => (c.delta as { content?: string }).content ?? "").join("")).toBe("😀 ok ");
    expect(choices.some((c) => String((c.delta as { content?: string }).content).includes("\ufffd"))).toBe(false);
    expect(choices.at(-1)).toMatchObject({ finish_reason: "stop", stop_reason: "END" });
    expect(objs.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 4 } } });
  });

  it("usage: the tokens up to the one completing a gateway-matched stop, the same streamed and not", () => {
    // The engine did not stop (its detokenizer disagreed): 3 tokens past the stop.
    const ids = tok.encode("one two three STOP four five six", { addSpecialTokens: false });
    const atStop = ids.findIndex((_, i) => tok.decode(ids.slice(0, i + 1)).includes("STOP")) + 1;
    expect(atStop).toBeGreaterThan(1);
    expect(atStop).toBeLessThan(ids.length);
    const streamed = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", { stream: true, stop: ["STOP"], stream_options: { include_usage: true } }), tok);
    ids.forEach((id) => streamed.onFrame(chunk(0, [id], 1)));
    streamed.onFrame(complete(0, ids.slice(-1), "length"));
    const final = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", { stop: ["STOP"] }), tok);
    final.onFrame(complete(0, ids, "length"));
    expect(streamed.usage().completion_tokens).toBe(atStop);
    expect(final.usage().completion_tokens).toBe(atStop);
    // Multi-token chunks: the stop lands inside one, the count is still the same.
    const chunky = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", { stream: true, stop: ["STOP"] }), tok);
    for (let i = 0; i < ids.length; i += 3) chunky.onFrame(chunk(0, ids.slice(i, i + 3), Math.min(3, ids.length - i)));
    expect(chunky.usage().completion_tokens).toBe(atStop);
  });

  it("usage: a streamed request sums its chunks' deltas (the complete repeats only the last one)", () => {
    const b = new OpenAiResponseBuilder({ api: "completions", ...meta }, samplingPlan("completions", { stream: true, n: 2 }), tok);
    const ids = tok.encode("a b c d e f g h i j k l m n", { addSpecialTokens: false });
    for (const id of ids) b.onFrame(chunk(0, [id], 1));
    b.onFrame(complete(0, ids.slice(-1), "length"));
    for (const id of ids.slice(0, 4)) b.onFrame(chunk(1, [id], 1));
    b.onFrame(complete(1, ids.slice(3, 4), "stop"));
    expect(b.usage()).toMatchObject({ prompt_tokens: 10, completion_tokens: ids.length + 4, total_tokens: 10 + ids.length + 4 });
  });

  it("text completions with logprobs", () => {
    const plan = samplingPlan("completions", { logprobs: 1 });
    const b = new OpenAiResponseBuilder({ api: "completions", ...meta }, plan, tok);
    const ids = tok.encode("Hi there", { addSpecialTokens: false });
    b.onFrame(create(GenerateResponseSchema, {
      response: { case: "complete", value: { index: 0, outputIds: ids, finishReason: "stop", promptTokens: 3, completionTokens: ids.length,
        outputLogprobs: { tokenLogprobs: ids.map(() => -0.5), tokenIds: ids, topLogprobs: ids.map((id) => ({ values: [-0.5], tokenIds: [id] })) } } },
    }));
    expect(b.result()).toMatchObject({
      object: "text_completion",
      choices: [{ text: "Hi there", finish_reason: "stop", logprobs: { tokens: ["Hi", " there"], token_logprobs: [-0.5, -0.5], top_logprobs: [{ Hi: -0.5 }, { " there": -0.5 }], text_offset: [0, 2] } }],
    });
  });
});
