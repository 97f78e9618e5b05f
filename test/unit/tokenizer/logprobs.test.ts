// Logprobs in the OpenAI answer built from VllmEngine frames: streamed chunks carry the
// logprobs of their tokens and concatenate to the non-streamed answer's, cut at a stop string;
// the exact OpenAI shapes (typed with the official SDK's types); vLLM's prompt_logprobs.
import { create } from "@bufbuild/protobuf";
import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { GenerateResponseSchema, type GenerateResponse } from "../../../src/gen/vllm_engine_pb.js";
import { OpenAiResponseBuilder } from "../../../src/tokenizer/openai-frames.js";
import { samplingPlan } from "../../../src/tokenizer/sampling.js";
import type { EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { qwen3Tokenizer } from "./qwen3-files.js";

let tok: EdgeTokenizer;
beforeAll(async () => {
  tok = await qwen3Tokenizer();
});
const meta = { id: "x-1", created: 1, model: "qwen3" };

/** Deterministic logprobs: the sampled token first among `k` alternatives. */
function lps(ids: number[], k: number) {
  return {
    tokenIds: ids,
    tokenLogprobs: ids.map((_, i) => -0.25 * (i + 1)),
    topLogprobs: k === 0 ? [] : ids.map((id, i) => ({ tokenIds: [id, 11, 13].slice(0, k), values: [-0.25 * (i + 1), -3, -4].slice(0, k) })),
  };
}
const complete = (ids: number[], k: number, finishReason = "length"): GenerateResponse =>
  create(GenerateResponseSchema, { response: { case: "complete", value: { index: 0, outputIds: ids, finishReason, promptTokens: 5, completionTokens: ids.length, outputLogprobs: lps(ids, k) } } });

function streamed(api: "chat" | "completions", body: Record<string, unknown>, ids: number[], k: number): Record<string, unknown>[] {
  const b = new OpenAiResponseBuilder({ api, ...meta }, samplingPlan(api, { ...body, stream: true }), tok);
  const lines = ids.flatMap((id, i) => b.onFrame(create(GenerateResponseSchema, {
    response: { case: "chunk", value: { index: 0, tokenIds: [id], promptTokens: 5, completionTokens: 1, outputLogprobs: { tokenIds: [id], tokenLogprobs: [-0.25 * (i + 1)], topLogprobs: k === 0 ? [] : [{ tokenIds: [id, 11, 13].slice(0, k), values: [-0.25 * (i + 1), -3, -4].slice(0, k) }] } } },
  })));
  lines.push(...b.onFrame(complete(ids.slice(-1), k)), ...b.finishStream());
  return lines.filter((l) => l !== "data: [DONE]\n\n").map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

function whole(api: "chat" | "completions", body: Record<string, unknown>, ids: number[], k: number): Record<string, unknown> {
  const b = new OpenAiResponseBuilder({ api, ...meta }, samplingPlan(api, body), tok);
  b.onFrame(complete(ids, k));
  return b.result();
}

describe("chat", () => {
  it("non-streamed: content[] with token, logprob, bytes and top_logprobs, in the SDK's shape", () => {
    const ids = tok.encode("Hi 𠀋", { addSpecialTokens: false });
    const r = whole("chat", { logprobs: true, top_logprobs: 2 }, ids, 3) as unknown as OpenAI.ChatCompletion;
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(ids.length);
    expect(content[0]).toEqual({ token: "Hi", logprob: -0.25, bytes: [72, 105], top_logprobs: [
      { token: "Hi", logprob: -0.25, bytes: [72, 105] },
      { token: tok.decode([11]), logprob: -3, bytes: [...new TextEncoder().encode(tok.decode([11]))] },
    ] });
    // A token carrying part of a UTF-8 character reads U+FFFD, as vLLM decodes it alone.
    expect(content.some((c) => c.token === "\ufffd")).toBe(true);
  });

  it("streamed: each chunk carries its tokens' logprobs; together they equal the non-streamed answer's", () => {
    const ids = tok.encode("Hi 𠀋 there, friend", { addSpecialTokens: false });
    const body = { logprobs: true, top_logprobs: 1 };
    const chunks = streamed("chat", body, ids, 2) as unknown as OpenAI.ChatCompletionChunk[];
    const fromChunks = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.content ?? []));
    const nonStreamed = (whole("chat", body, ids, 2) as unknown as OpenAI.ChatCompletion).choices[0]!.logprobs!.content;
    expect(fromChunks).toEqual(nonStreamed);
    // The emoji's tokens ride the chunk that completes the character: its logprobs count two or more.
    expect(chunks.some((c) => (c.choices[0]?.logprobs?.content?.length ?? 0) > 1)).toBe(true);
    for (const c of chunks) if (c.choices.length > 0) expect(c.choices[0]!.logprobs).not.toBeNull();
  });

  it("without logprobs, every chunk's logprobs is null", () => {
    const ids = tok.encode("Hi there", { addSpecialTokens: false });
    const chunks = streamed("chat", {}, ids, 0);
    for (const c of chunks) for (const ch of c.choices as Record<string, unknown>[]) expect(ch.logprobs).toBeNull();
  });

  it("a stop string cuts the logprobs at the token that completed it, streamed and not", () => {
    const ids = tok.encode("one two STOP three four", { addSpecialTokens: false });
    const atStop = ids.findIndex((_, i) => tok.decode(ids.slice(0, i + 1)).includes("STOP")) + 1;
    const body = { logprobs: true, stop: ["STOP"] };
    const chunks = streamed("chat", body, ids, 0) as unknown as OpenAI.ChatCompletionChunk[];
    const fromChunks = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.content ?? []));
    expect(fromChunks).toHaveLength(atStop);
    const b = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", body), tok);
    b.onFrame(complete(ids, 0));
    expect((b.result() as unknown as OpenAI.ChatCompletion).choices[0]!.logprobs!.content).toEqual(fromChunks);
  });

  it("return_tokens_as_token_ids writes tokens as token_id:<id>", () => {
    const ids = tok.encode("Hi", { addSpecialTokens: false });
    const r = whole("chat", { logprobs: true, top_logprobs: 1, return_tokens_as_token_ids: true }, ids, 1) as unknown as OpenAI.ChatCompletion;
    expect(r.choices[0]!.logprobs!.content![0]).toMatchObject({ token: `token_id:${ids[0]}`, top_logprobs: [{ token: `token_id:${ids[0]}` }] });
  });
});

describe("completions", () => {
  it("tokens, token_logprobs, top_logprobs dicts and text_offset; streamed equals non-streamed", () => {
    const ids = tok.encode("Hi there you", { addSpecialTokens: false });
    const body = { logprobs: 2 };
    const r = whole("completions", body, ids, 2) as unknown as OpenAI.Completion;
    const lp = r.choices[0]!.logprobs!;
    expect(lp.tokens).toEqual(["Hi", " there", " you"]);
    expect(lp.token_logprobs).toEqual([-0.25, -0.5, -0.75]);
    expect(lp.text_offset).toEqual([0, 2, 8]);
    expect(lp.top_logprobs![1]).toEqual({ " there": -0.5, [tok.decode([11])]: -3 });
    const chunks = streamed("completions", body, ids, 2) as unknown as OpenAI.Completion[];
    const cat = { tokens: [] as string[], token_logprobs: [] as number[], text_offset: [] as number[] };
    for (const c of chunks) for (const ch of c.choices) {
      cat.tokens.push(...(ch.logprobs?.tokens ?? []));
      cat.token_logprobs.push(...(ch.logprobs?.token_logprobs ?? []));
      cat.text_offset.push(...(ch.logprobs?.text_offset ?? []));
    }
    expect(cat).toEqual({ tokens: lp.tokens, token_logprobs: lp.token_logprobs, text_offset: lp.text_offset });
  });
});

describe("prompt_logprobs (vLLM's shape)", () => {
  const input = { tokenIds: [9707, 11, 1879], tokenLogprobs: [{}, { value: -1.5 }, { value: -0.5 }], topLogprobs: [{ tokenIds: [], values: [] }, { tokenIds: [13, 11], values: [-1, -1.5] }, { tokenIds: [1879, 13], values: [-0.5, -2] }] };
  const frame = create(GenerateResponseSchema, { response: { case: "complete", value: { index: 0, outputIds: [11], finishReason: "length", promptTokens: 3, completionTokens: 1, inputLogprobs: input } } });

  it("chat: beside the choices; null first, then the prompt token and the top alternatives with rank and decoded_token", () => {
    const b = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", { prompt_logprobs: 2 }), tok);
    b.onFrame(frame);
    const r = b.result();
    expect(r.prompt_logprobs).toEqual([
      null,
      { "11": { logprob: -1.5, rank: 2, decoded_token: "," }, "13": { logprob: -1, rank: 1, decoded_token: "." } },
      { "1879": { logprob: -0.5, rank: 1, decoded_token: tok.decode([1879]) }, "13": { logprob: -2, rank: 2, decoded_token: "." } },
    ]);
  });

  it("completions: in each choice; prompt_logprobs 0 keeps only the prompt's own token (rank unknown: null)", () => {
    const b = new OpenAiResponseBuilder({ api: "completions", ...meta }, samplingPlan("completions", { prompt_logprobs: 0 }), tok);
    b.onFrame(frame);
    const r = b.result() as { choices: Record<string, unknown>[]; prompt_logprobs?: unknown };
    expect(r.prompt_logprobs).toBeUndefined();
    expect(r.choices[0]!.prompt_logprobs).toEqual([null, { "11": { logprob: -1.5, rank: null, decoded_token: "," } }, { "1879": { logprob: -0.5, rank: null, decoded_token: tok.decode([1879]) } }]);
  });

  it("not asked for: no prompt_logprobs field", () => {
    const b = new OpenAiResponseBuilder({ api: "chat", ...meta }, samplingPlan("chat", {}), tok);
    b.onFrame(frame);
    expect(b.result()).not.toHaveProperty("prompt_logprobs");
  });
});

it("continuous_usage_stats: every chunk carries the usage so far", () => {
  const ids = tok.encode("a b c d", { addSpecialTokens: false });
  const chunks = streamed("chat", { stream_options: { include_usage: true, continuous_usage_stats: true } }, ids, 0);
  const counts = chunks.map((c) => (c.usage as { completion_tokens: number }).completion_tokens);
  expect(counts.at(-1)).toBe(ids.length);
  expect(counts.every((n, i) => i === 0 || n >= counts[i - 1]!)).toBe(true);
  expect(counts[0]).toBeLessThan(ids.length);
});
