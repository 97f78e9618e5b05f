// The sim's Qwen3 engines end to end with the edge tokenizer: GetTokenizer -> verified bundle ->
// chat template -> token ids -> Generate -> detokenized OpenAI response. Also the 502 path (a
// wrong sha256) and a scripted reply whose tokens split emoji and CJK characters.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileChatTemplate, encodeChatPrompt, renderChatTemplate } from "../../../src/tokenizer/chat-template.js";
import { bundleFromChunks, type TokenizerBundle } from "../../../src/tokenizer/bundle.js";
import { OpenAiResponseBuilder } from "../../../src/tokenizer/openai-frames.js";
import { samplingPlan } from "../../../src/tokenizer/sampling.js";
import { selectChatTemplate } from "../../../src/tokenizer/template-source.js";
import { loadTokenizer, type EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, connectClient, type EngineClient } from "../sim/helpers.js";

let c: RunningCluster;
let engine: EngineClient;
let bundle: TokenizerBundle;
let tok: EdgeTokenizer;

beforeAll(async () => {
  c = await cluster([
    { name: "q", role: "both", kvConnector: "none", model: "Qwen/Qwen3-0.6B", latency: FAST },
    { name: "bad", role: "both", kvConnector: "none", model: "qwen3-bad-sha256", latency: FAST },
    { name: "plain", role: "both", kvConnector: "none", latency: FAST },
  ]);
  engine = connectClient(c.engine("q"));
  bundle = await bundleFromChunks(engine.getTokenizer({}));
  tok = await loadTokenizer(bundle);
}, 30_000);
afterAll(() => c?.close());

async function chat(content: string, body: Record<string, unknown>) {
  const config = JSON.parse(bundle.files.get("tokenizer_config.json")!) as Record<string, unknown>;
  const template = await compileChatTemplate(selectChatTemplate(bundle.files, { hasTools: false }));
  const prompt = await renderChatTemplate(template, { messages: [{ role: "user", content }], addGenerationPrompt: true, tokenizerConfig: config });
  const ids = encodeChatPrompt(tok, prompt);
  const plan = samplingPlan("chat", body, { maxContextLength: 40_960, promptTokens: ids.length });
  const builder = new OpenAiResponseBuilder({ api: "chat", id: "x", created: 0, model: "qwen3" }, plan, tok);
  const lines: string[] = [];
  for await (const frame of engine.generate({ requestId: `t-${Math.random()}`, input: { case: "tokenized", value: { inputIds: ids, originalText: prompt } }, samplingParams: plan.samplingParams, stream: plan.stream })) {
    lines.push(...builder.onFrame(frame));
  }
  return { builder, lines, ids };
}

describe("sim Qwen3 engine", () => {
  it("serves the real tokenizer bundle in 64 KiB chunks with a verifiable sha256", async () => {
    const chunks = [];
    for await (const ch of engine.getTokenizer({})) chunks.push(ch);
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.slice(0, -1).every((ch) => ch.data.byteLength === 64 * 1024 && ch.sha256 === "")).toBe(true);
    expect(chunks.at(-1)!.sha256).toBe(bundle.sha256);
    expect(tok.eosTokenIds).toEqual([151645, 151643]);
  });

  it("reports Qwen3's eos ids and context length", async () => {
    expect(await engine.getModelInfo({})).toMatchObject({ eosTokenIds: [151645, 151643], maxContextLength: 40_960, vocabSize: 151_936 });
  });

  it("a wrong sha256 is a typed sha256_mismatch (the gateway's 502)", async () => {
    await expect(bundleFromChunks(connectClient(c.engine("bad")).getTokenizer({}))).rejects.toMatchObject({ kind: "sha256_mismatch" });
    await expect(bundleFromChunks(engine.getTokenizer({}, { headers: { "x-sim-tokenizer": "bad-sha256" } }))).rejects.toMatchObject({ kind: "sha256_mismatch" });
  });

  it("engines of other models keep GetTokenizer unimplemented", async () => {
    await expect(bundleFromChunks(connectClient(c.engine("plain")).getTokenizer({}))).rejects.toMatchObject({ kind: "stream_failed" });
  });

  it("a scripted reply splits emoji/CJK across tokens; streamed deltas never carry U+FFFD", async () => {
    const reply = "😀 边缘 🎉";
    const replyIds = tok.encode(reply, { addSpecialTokens: false });
    expect(replyIds.some((id) => tok.decode([id]).includes("\ufffd"))).toBe(true);
    const { builder, lines } = await chat(`<sim-say>${reply}</sim-say>`, { stream: true, max_tokens: replyIds.length, ignore_eos: true });
    expect(lines.some((l) => l.includes("\ufffd"))).toBe(false);
    expect(builder.result()).toMatchObject({ choices: [{ message: { content: reply }, finish_reason: "length" }] });
  });

  it("the gateway cuts a stop string the engine's text produces", async () => {
    const { builder } = await chat("<sim-say>alpha beta STOP gamma</sim-say>", { max_tokens: 12, ignore_eos: true, stop: ["STOP"] });
    expect(builder.result()).toMatchObject({ choices: [{ message: { content: "alpha beta " }, finish_reason: "stop", stop_reason: "STOP" }] });
  });
});
