// Usage is the tokens streamed, on every path, and the same request counts the same streamed
// and not (docs/metrics.md, docs/api.md "Usage"). The sim's VllmEngine engines count as the
// upstream servicer does (a chunk's completion_tokens is its delta; a streamed complete
// repeats only the last delta), so a gateway that takes the largest count, or the
// complete's, reports 1 for a whole stream.
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import type { GenerateResponse } from "../../src/gen/vllm_engine_pb.js";
import { tokenizersOf } from "../../src/api/openai/engine-generation.js";
import { parseConfig } from "../../src/config/load.js";
import { detokenize, outputTokenIds, tokenize } from "../../sim/tokens.js";
import type { EngineSpec } from "../../sim/types.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { httpPairConfig, httpPairSpecs, openai } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const PROMPT = "count every token you are given back";
const PROMPT_IDS = tokenize(PROMPT);
/** A stop string the sim model completes with the 7th output token (no seed). */
const STOP_AT = 7;
const STOP = detokenize([outputTokenIds(PROMPT_IDS, undefined, 0, STOP_AT)[STOP_AT - 1]!]).trim();

/** A Generate through the gateway: the frames and the tokens they streamed. */
async function engineGenerate(gw: TestGateway, o: { stream: boolean; binary: boolean; requestId: string; stop?: string[] }) {
  const frames: GenerateResponse[] = [];
  const req = { requestId: o.requestId, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 20, ignoreEos: true, stop: o.stop ?? [] }, stream: o.stream };
  for await (const f of gw.engineClient("connect", o.binary).generate(req, { headers: { "x-model": MODEL } })) frames.push(f);
  const chunkTokens = frames.reduce((s, f) => s + (f.response.case === "chunk" ? f.response.value.tokenIds.length : 0), 0);
  const complete = frames.find((f) => f.response.case === "complete")!.response.value as { completionTokens: number; outputIds: number[] };
  return { frames, chunkTokens, complete };
}

describe("streamed usage equals the tokens streamed on every path", () => {
  it.each([
    ["the decoded relay", false],
    ["the raw relay (binary client, same protocol)", true],
  ])("Connect Generate, %s: stream_complete counts the chunks' tokens, not the complete's last delta", async (_name, binary) => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { transport: "connect" }));
    const s = await engineGenerate(gw, { stream: true, binary, requestId: "u-s" });
    expect(s.chunkTokens).toBe(20);
    expect(s.complete.completionTokens).toBe(1); // the servicer's streamed complete: the last delta
    await gw.settle();
    expect(gw.metrics.ofType("stream_complete")).toMatchObject([{ surface: "engine", outputTokens: 20, inputTokens: PROMPT_IDS.length }]);
  });

  it("Connect Generate unary and streamed agree, a stop string included", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { transport: "connect" }));
    const unary = await engineGenerate(gw, { stream: false, binary: false, requestId: "u-1", stop: [STOP] });
    await cluster.reset();
    const streamed = await engineGenerate(gw, { stream: true, binary: true, requestId: "u-2", stop: [STOP] });
    expect(unary.complete.completionTokens).toBe(STOP_AT);
    expect(unary.complete.outputIds).toHaveLength(STOP_AT);
    expect(streamed.chunkTokens).toBe(STOP_AT);
    await gw.settle();
    expect(gw.metrics.ofType("stream_complete").map((e) => e.outputTokens)).toEqual([STOP_AT]);
  });

  it.each([
    ["chat", "/v1/chat/completions"],
    ["completions", "/v1/completions"],
  ] as const)("OpenAI %s over HTTP engines: the usage chunk, the non-streamed usage and stream_complete agree with the chunks", async (_name, route) => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster));
    const input = route === "/v1/chat/completions" ? { messages: [{ role: "user" as const, content: PROMPT }] } : { prompt: PROMPT };
    const body = { model: "m", ...input, max_tokens: 20, ignore_eos: true, stop: [STOP] };
    const call = (extra: Record<string, unknown>) => (route === "/v1/chat/completions" ? openai(gw).chat.completions.create({ ...body, ...extra } as never) : openai(gw).completions.create({ ...body, ...extra } as never));
    const final = (await call({})) as unknown as { usage: { completion_tokens: number } };
    await cluster.reset();
    const stream = (await call({ stream: true, stream_options: { include_usage: true } })) as unknown as AsyncIterable<{ choices: { delta?: { role?: string } }[]; usage?: { completion_tokens: number } | null }>;
    let tokenChunks = 0;
    let usage: number | undefined;
    for await (const c of stream) {
      // One chunk per token (chat's role announcement aside).
      if (c.choices.length > 0 && c.choices[0]!.delta?.role === undefined) tokenChunks++;
      if (c.usage) usage = c.usage.completion_tokens;
    }
    expect(final.usage.completion_tokens).toBe(STOP_AT);
    expect(tokenChunks).toBe(STOP_AT);
    expect(usage).toBe(STOP_AT);
    await gw.settle();
    expect(gw.metrics.ofType("stream_complete").map((e) => e.outputTokens)).toEqual([STOP_AT]);
  });
});

describe("OpenAI over VllmEngine engines (the gateway detokenizes)", () => {
  const QWEN = "Qwen/Qwen3-0.6B";
  const REPLY = "alpha beta gamma STOP delta epsilon zeta eta theta";
  const specs = (): EngineSpec[] => [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: QWEN, port: 0, latency: FAST },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: QWEN, port: 0, latency: FAST },
  ];
  const config = (c: TestCluster) => ({
    models: { [QWEN]: { prefill: [{ name: "prefill", url: c.url("prefill"), transport: "connect" }], decode: [{ name: "decode", url: c.url("decode"), transport: "grpc-web" }] } },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  });
  const sdk = (gw: TestGateway) => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });
  async function tokenizer(gw: TestGateway) {
    const pools = parseConfig(JSON.stringify(config(cluster!))).models[QWEN]!;
    return (await tokenizersOf(gw.isolate).get({ model: QWEN, engines: [...pools.decode, ...pools.prefill], waitUntil: () => {} })).tokenizer;
  }

  async function both(gw: TestGateway, route: "chat" | "completions", extra: Record<string, unknown>) {
    const base = route === "chat" ? { messages: [{ role: "user", content: `<sim-say>${REPLY}</sim-say>` }] } : { prompt: `<sim-say>${REPLY}</sim-say>` };
    const body = { model: QWEN, ...base, max_tokens: 14, ignore_eos: true, ...extra } as never;
    const create = (b: never) => (route === "chat" ? sdk(gw).chat.completions.create(b) : sdk(gw).completions.create(b)) as unknown;
    const final = (await create(body)) as { usage: { completion_tokens: number } };
    await cluster!.reset();
    const stream = (await create({ ...(body as object), stream: true, stream_options: { include_usage: true } } as never)) as AsyncIterable<{ usage?: { completion_tokens: number } | null }>;
    let streamed: number | undefined;
    for await (const c of stream) if (c.usage) streamed = c.usage.completion_tokens;
    await gw.settle();
    return { final: final.usage.completion_tokens, streamed, metric: gw.metrics.ofType("stream_complete").map((e) => e.outputTokens) };
  }

  it.each(["chat", "completions"] as const)("%s: a 14-token reply counts 14 streamed and not (was 1 streamed)", async (route) => {
    cluster = await startTestCluster({ engines: specs() });
    const gw = testGateway(config(cluster));
    expect(await both(gw, route, {})).toEqual({ final: 14, streamed: 14, metric: [14] });
  });

  it.each(["chat", "completions"] as const)("%s with a stop string: both count the tokens up to the one that completed it", async (route) => {
    cluster = await startTestCluster({ engines: specs() });
    const gw = testGateway(config(cluster));
    const got = await both(gw, route, { stop: ["STOP"] });
    const ids = (await tokenizer(gw)).encode(REPLY, { addSpecialTokens: false });
    const tok = await tokenizer(gw);
    const atStop = ids.findIndex((_, i) => tok.decode(ids.slice(0, i + 1)).includes("STOP")) + 1;
    expect(atStop).toBeGreaterThan(1);
    expect(atStop).toBeLessThan(14); // the engine itself went on: its detokenizer is not the gateway's
    expect(got).toEqual({ final: atStop, streamed: atStop, metric: [atStop] });
  });
});
