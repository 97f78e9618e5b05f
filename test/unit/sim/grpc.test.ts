// The VllmEngine service over Connect, gRPC-web and plain gRPC (h2c): frames, determinism,
// n>1, validation and the discovery RPCs.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detokenize, naturalLength, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import {
  FAST, closeSessions, cluster, connectClient, delay, generate, grpcClient, grpcWebClient, stats, streamedTokens, waitFor,
  type EngineClient,
} from "./helpers.js";

let c: RunningCluster;
let client: EngineClient;
const PROMPT = "the quick brown fox jumps";
const ids = tokenize(PROMPT);

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p-kv", grpcPort: 0, latency: FAST },
    { name: "m", role: "decode", kvConnector: "MooncakeConnector", kvEngineId: "m-kv", dataParallelSize: 2, latency: FAST, model: "other" },
    { name: "plain", role: "both", kvConnector: "none", latency: { ...FAST, perOutputTokenMs: 20 } },
  ]);
  client = connectClient(c.engine("p"));
});
afterAll(async () => {
  closeSessions();
  await c.close();
});

describe("Generate", () => {
  it("FINAL_ONLY: one complete with the deterministic tokens, no chunks", async () => {
    const r = await generate(client, { requestId: "r1", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 5, seed: 3 } });
    expect(r.chunks).toHaveLength(0);
    expect(r.completes).toHaveLength(1);
    const done = r.completes[0]!;
    expect(done.outputIds).toEqual(outputTokenIds(ids, 3, 0, 5));
    expect(done.finishReason).toBe("length");
    expect(done.promptTokens).toBe(ids.length);
    expect(done.completionTokens).toBe(5);
    expect(done.index).toBe(0);
    expect(done.kvTransferParamsJson).toBeUndefined();
  });

  it("DELTA: one chunk per token counting its own tokens, then a complete with the last delta only", async () => {
    const r = await generate(client, { requestId: "r2", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 }, stream: true });
    const expected = outputTokenIds(ids, undefined, 0, 4);
    expect(r.chunks.map((ch) => ch.tokenIds)).toEqual(expected.map((t) => [t]));
    // The servicer's _chunk_response: completion_tokens = len(delta) ("client will accumulate").
    expect(r.chunks.map((ch) => ch.completionTokens)).toEqual([1, 1, 1, 1]);
    expect(r.chunks.every((ch) => ch.promptTokens === ids.length && ch.index === 0)).toBe(true);
    expect(r.frames.at(-1)!.response.case).toBe("complete");
    // _complete_response in DELTA mode: the final step's tokens again, and their count.
    expect(r.completes[0]!.outputIds).toEqual([expected[3]]);
    expect(r.completes[0]!.completionTokens).toBe(1);
    expect(r.completes[0]!.finishReason).toBe("length");
  });

  it("usage: the streamed deltas sum to the non-streamed count, a stop string included", async () => {
    const toks = outputTokenIds(ids, undefined, 0, 12);
    const stop = detokenize([toks[6]!]).trim();
    const sampling = { maxTokens: 12, ignoreEos: true, stop: [stop] };
    const final = await generate(client, { requestId: "u1", input: { case: "text", value: PROMPT }, samplingParams: sampling });
    const streamed = await generate(client, { requestId: "u2", input: { case: "text", value: PROMPT }, samplingParams: sampling, stream: true });
    const total = final.completes[0]!.completionTokens;
    expect(final.completes[0]!.outputIds).toHaveLength(total);
    expect(total).toBeLessThan(12); // the stop string ended it
    expect(streamed.chunks.reduce((s, ch) => s + ch.completionTokens, 0)).toBe(total);
    expect(streamedTokens(streamed)).toEqual(final.completes[0]!.outputIds);
    expect(streamed.completes[0]!.completionTokens).toBe(1);
  });

  it("defaults to max_tokens 16 and accepts tokenized input", async () => {
    const r = await generate(client, { requestId: "r3", input: { case: "tokenized", value: { inputIds: ids } }, samplingParams: { ignoreEos: true } });
    expect(r.completes[0]!.outputIds).toEqual(outputTokenIds(ids, undefined, 0, 16));
  });

  it("stops at the natural length unless ignore_eos", async () => {
    const natural = naturalLength(ids, 1, 0);
    const r = await generate(client, { requestId: "r4", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 100, seed: 1 } });
    expect(r.completes[0]!.finishReason).toBe("stop");
    expect(r.completes[0]!.outputIds).toHaveLength(natural);
    const r2 = await generate(client, { requestId: "r5", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 40, seed: 1, ignoreEos: true } });
    expect(r2.completes[0]!.finishReason).toBe("length");
    expect(r2.completes[0]!.outputIds).toHaveLength(40);
  });

  it("stops on a stop string and reports it", async () => {
    const toks = outputTokenIds(ids, undefined, 0, 8);
    const stop = detokenize([toks[5]!]).trim();
    let expectedLen = 0;
    for (let i = 1; i <= toks.length; i++) if (detokenize(toks.slice(0, i)).includes(stop)) { expectedLen = i; break; }
    const r = await generate(client, { requestId: "r6", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 8, ignoreEos: true, stop: [stop] } });
    const done = r.completes[0]!;
    expect(done.finishReason).toBe("stop");
    expect(done.matchedStop).toEqual({ case: "matchedStopStr", value: stop });
    expect(done.outputIds).toEqual(toks.slice(0, expectedLen));
  });

  it("n>1 streams per-index chunks and one complete per index", async () => {
    const r = await generate(client, { requestId: "r7", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 3, n: 3 }, stream: true });
    expect(r.chunks).toHaveLength(9);
    expect(r.completes.map((x) => x.index).sort()).toEqual([0, 1, 2]);
    for (const i of [0, 1, 2]) {
      const expected = outputTokenIds(ids, undefined, i, 3);
      expect(r.chunks.filter((ch) => ch.index === i).map((ch) => ch.tokenIds[0])).toEqual(expected);
      expect(streamedTokens(r, i)).toEqual(expected);
      expect(r.completes.find((x) => x.index === i)!.outputIds).toEqual([expected[2]]);
    }
    const f = await generate(client, { requestId: "r8", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 3, n: 2 } });
    expect(f.chunks).toHaveLength(0);
    expect(f.completes.map((x) => x.index)).toEqual([0, 1]);
  });

  it("works over gRPC-web and plain gRPC (h2c) with the same output", async () => {
    const init = { requestId: "r9", input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 6 }, stream: true };
    const web = await generate(grpcWebClient(c.engine("p")), init);
    const grpc = await generate(grpcClient(c.engine("p")), { ...init, requestId: "r10" });
    const expected = outputTokenIds(ids, undefined, 0, 6);
    expect(streamedTokens(web)).toEqual(expected);
    expect(streamedTokens(grpc)).toEqual(expected);
    expect(grpc.chunks).toHaveLength(6);
    const s = await stats(c.engine("p"));
    const protocols = s.recent.filter((r) => r.requestId === "r9" || r.requestId === "r10").map((r) => r.protocol);
    expect(protocols).toEqual(["grpc-web", "grpc"]);
  });

  it("records requests in proto JSON with proto field names", async () => {
    await generate(client, { requestId: "rec-1", input: { case: "text", value: "a b" }, samplingParams: { maxTokens: 1 }, kvTransferParamsJson: "{}" }, { "x-trace": "t1" });
    const s = await stats(c.engine("p"));
    const rec = s.recent.at(-1)!;
    expect(rec).toMatchObject({ surface: "grpc", method: "Generate", protocol: "connect", requestId: "rec-1" });
    expect(rec.body).toMatchObject({ request_id: "rec-1", text: "a b", sampling_params: { max_tokens: 1 }, kv_transfer_params_json: "{}" });
    expect(rec.headers?.["x-trace"]).toBe("t1");
  });
});

describe("validation", () => {
  const base = { requestId: "bad", input: { case: "text" as const, value: PROMPT } };
  const codeOf = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return ConnectError.from(e).code;
    }
    return "ok";
  };

  it("rejects kv_transfer_params_json that is not a JSON object", async () => {
    expect(await codeOf(generate(client, { ...base, kvTransferParamsJson: "[1,2]" }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { ...base, kvTransferParamsJson: "not json" }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { ...base, kvTransferParamsJson: "null" }))).toBe(Code.InvalidArgument);
  });

  it("rejects legacy typed params with an empty host or a bad port; JSON wins when both set", async () => {
    expect(await codeOf(generate(client, { ...base, kvTransferParams: { remoteHost: "", remotePort: 80 } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { ...base, kvTransferParams: { remoteHost: "h", remotePort: 0 } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { ...base, kvTransferParams: { remoteHost: "h", remotePort: 70000 } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { ...base, samplingParams: { maxTokens: 1 }, kvTransferParamsJson: "{}", kvTransferParams: { remoteHost: "", remotePort: 0 } }))).toBe("ok");
  });

  it("rejects a missing or empty prompt", async () => {
    expect(await codeOf(generate(client, { requestId: "x" }))).toBe(Code.InvalidArgument);
    expect(await codeOf(generate(client, { requestId: "x", input: { case: "text", value: "   " } }))).toBe(Code.InvalidArgument);
  });
});

describe("discovery RPCs", () => {
  it("HealthCheck and GetModelInfo", async () => {
    expect(await client.healthCheck({})).toMatchObject({ healthy: true, message: "Health" });
    const info = await connectClient(c.engine("m")).getModelInfo({});
    expect(info).toMatchObject({ servedModelName: "other", isGeneration: true, maxContextLength: 32768, vocabSize: 50000, eosTokenIds: [2] });
  });

  it("GetServerInfo reports the configured connector, role, engine id and DP size", async () => {
    expect(await client.getServerInfo({})).toMatchObject({
      kvConnector: "NixlConnector", kvRole: "kv_producer", kvEngineId: "p-kv", dataParallelSize: 1, serverType: "vllm-grpc",
    });
    expect(await connectClient(c.engine("m")).getServerInfo({})).toMatchObject({
      kvConnector: "MooncakeConnector", kvRole: "kv_consumer", kvEngineId: "m-kv", dataParallelSize: 2,
    });
    expect(await connectClient(c.engine("plain")).getServerInfo({})).toMatchObject({ kvConnector: "", kvRole: "", kvEngineId: "", dataParallelSize: 1 });
  });

  it("GetLoads and GetServerInfo see a running request", async () => {
    const plain = connectClient(c.engine("plain"));
    const done = generate(plain, { requestId: "load-1", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 50, ignoreEos: true } })
      .catch(() => undefined);
    await waitFor(async () => (await stats(c.engine("plain"))).activeRequests === 1);
    await delay(30);
    const loads = await plain.getLoads({});
    expect(loads.loads).toHaveLength(1);
    expect(loads.loads[0]).toMatchObject({ dpRank: 0, numRunningReqs: 1, numWaitingReqs: 0, numTotalReqs: 1 });
    expect(loads.loads[0]!.tokenUsage).toBeGreaterThan(0);
    expect((await plain.getServerInfo({})).activeRequests).toBe(1);
    await plain.abort({ requestIds: ["load-1"] });
    await done;
    expect((await plain.getLoads({})).loads[0]!.numTotalReqs).toBe(0);
  });

  it("Embed, GetTokenizer and SubscribeKvEvents are Unimplemented", async () => {
    const code = async (f: () => Promise<unknown>) => f().then(() => "ok", (e) => ConnectError.from(e).code);
    expect(await code(() => client.embed({ requestId: "e" }))).toBe(Code.Unimplemented);
    expect(await code(async () => { for await (const _ of client.getTokenizer({})) void _; })).toBe(Code.Unimplemented);
    expect(await code(async () => { for await (const _ of client.subscribeKvEvents({})) void _; })).toBe(Code.Unimplemented);
  });
});
