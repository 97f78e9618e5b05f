// NIXL handoffs: pin only after a length-capped prefill, single-consumer pulls, refusals and
// recomputation, lease expiry, and the n>1 sibling hazard.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detokenize, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, connectClient, delay, generate, postJson, prefillInit, resetAll, stats, streamedTokens, type EngineClient } from "./helpers.js";

let c: RunningCluster;
let prefill: EngineClient;
let decode: EngineClient;
// 40 words -> 40 prompt tokens -> 3 blocks of 16.
const PROMPT = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
const LEN = 40;

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p-kv", latency: FAST },
    { name: "d", role: "decode", kvConnector: "NixlConnector", kvEngineId: "d-kv", latency: FAST },
    { name: "short", role: "prefill", kvConnector: "NixlConnector", leaseMs: 100, latency: FAST },
  ]);
  prefill = connectClient(c.engine("p"));
  decode = connectClient(c.engine("d"));
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

async function handoff(id: string, client = prefill): Promise<string> {
  const r = await generate(client, prefillInit(id, PROMPT));
  const json = r.completes[0]!.kvTransferParamsJson;
  if (!json) throw new Error("no handoff");
  return json;
}

const decodeInit = (id: string, kvJson: string, n = 1) => ({
  requestId: id,
  input: { case: "text" as const, value: PROMPT },
  samplingParams: { maxTokens: 4, n, ignoreEos: true },
  stream: true,
  kvTransferParamsJson: kvJson,
});

describe("NIXL prefill", () => {
  it("pins ceil(prompt/blockSize) blocks and returns the handoff after a length-capped finish", async () => {
    const r = await generate(prefill, prefillInit("req-1", PROMPT));
    const done = r.completes[0]!;
    expect(done.finishReason).toBe("length");
    const params = JSON.parse(done.kvTransferParamsJson!);
    expect(params).toEqual({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: expect.any(Array),
      remote_engine_id: "p-kv",
      remote_request_id: "req-1",
      remote_host: "127.0.0.1",
      remote_port: c.engine("p").spec.port,
      tp_size: 1,
    });
    expect(params.remote_block_ids).toHaveLength(3);
    // The servicer's legacy typed mirror.
    expect(done.kvTransferParams).toMatchObject({ remoteHost: "127.0.0.1", remotePort: c.engine("p").spec.port });
    const s = await stats(c.engine("p"));
    expect(s).toMatchObject({ blocksPinned: 3, handoffsPinned: 1, prefillComputations: 1, promptTokensComputed: LEN });
  });

  it("returns nothing and pins nothing when the prefill finished with stop", async () => {
    const r = await generate(prefill, {
      requestId: "req-2", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 100 },
      kvTransferParamsJson: '{"do_remote_decode":true,"do_remote_prefill":false}',
    });
    expect(r.completes[0]!.finishReason).toBe("stop");
    expect(r.completes[0]!.kvTransferParamsJson).toBeUndefined();
    expect((await stats(c.engine("p"))).blocksPinned).toBe(0);
  });

  // vLLM nixl_connector.py request_finished: a do_remote_decode request that did not finish
  // FINISHED_LENGTH_CAPPED returns no kv_transfer_params and its blocks are freed at once.
  const first = outputTokenIds(tokenize(PROMPT), undefined, 0, 1)[0]!;
  const NIXL_TAG = '{"do_remote_decode":true,"do_remote_prefill":false}';
  it.each([
    ["its one token is EOS", { maxTokens: 1 }, [{ eosAfter: 1, leg: "prefill", count: 1 }]],
    ["its one token is a stop token id", { maxTokens: 1, ignoreEos: true, stopTokenIds: [first] }, []],
    ["its one token completes a stop string", { maxTokens: 1, ignoreEos: true, stop: [detokenize([first]).trim()] }, []],
  ])("a one-token prefill ends with stop when %s: no handoff, nothing pinned", async (_name, samplingParams, faults) => {
    await postJson(`${c.engine("p").url}/sim/faults`, faults);
    const r = await generate(prefill, { requestId: "one", input: { case: "text", value: PROMPT }, samplingParams, kvTransferParamsJson: NIXL_TAG });
    expect(r.completes[0]!.finishReason).toBe("stop");
    expect(r.completes[0]!.outputIds).toEqual([first]);
    expect(r.completes[0]!.kvTransferParamsJson).toBeUndefined();
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 0, handoffsPinned: 0, prefillComputations: 1 });
  });

  it("the same prefill capped as the gateway caps it (EOS ignored, no stops) hands off", async () => {
    await postJson(`${c.engine("p").url}/sim/faults`, [{ eosAfter: 1, leg: "prefill", count: 1 }]);
    const r = await generate(prefill, prefillInit("capped", PROMPT));
    expect(r.completes[0]!.finishReason).toBe("length");
    expect(r.completes[0]!.kvTransferParamsJson).toBeDefined();
    expect((await stats(c.engine("p"))).handoffsPinned).toBe(1);
  });

  it("does not pin without do_remote_decode", async () => {
    const r = await generate(prefill, { ...prefillInit("req-3", PROMPT), kvTransferParamsJson: undefined });
    expect(r.completes[0]!.kvTransferParamsJson).toBeUndefined();
    expect((await stats(c.engine("p"))).blocksPinned).toBe(0);
  });
});

describe("NIXL decode", () => {
  it("serves one pull; the decode skips the prompt; a second pull is refused and recomputes", async () => {
    const kv = await handoff("req-10");
    const r = await generate(decode, decodeInit("req-10", kv));
    expect(streamedTokens(r)).toEqual(outputTokenIds(tokenize(PROMPT), undefined, 0, 4));
    expect(r.completes[0]!.cachedTokens).toBe(LEN);
    let p = await stats(c.engine("p"));
    let d = await stats(c.engine("d"));
    expect(p).toMatchObject({ kvPullsServed: 1, kvPullsRefused: 0, blocksPinned: 0, handoffsPinned: 0 });
    expect(d).toMatchObject({ promptTokensComputed: 0, prefillComputations: 0, kvRecomputes: 0, kvPullsCompleted: 1, decodeRequests: 1 });

    const again = await generate(decode, decodeInit("req-10", kv));
    expect(streamedTokens(again)).toEqual(streamedTokens(r));
    expect(again.completes[0]!.cachedTokens).toBe(0);
    p = await stats(c.engine("p"));
    d = await stats(c.engine("d"));
    expect(p.kvPullsRefused).toBe(1);
    expect(d).toMatchObject({ promptTokensComputed: LEN, prefillComputations: 1, kvRecomputes: 1 });
  });

  it("refuses a pull whose block ids do not match, leaving the blocks pinned", async () => {
    const kv = JSON.parse(await handoff("req-11"));
    kv.remote_block_ids = [999_999];
    await generate(decode, decodeInit("req-11", JSON.stringify(kv)));
    expect(await stats(c.engine("p"))).toMatchObject({ kvPullsRefused: 1, kvPullsServed: 0, blocksPinned: 3 });
    expect((await stats(c.engine("d"))).kvRecomputes).toBe(1);
  });

  it("recomputes when the side channel is unreachable", async () => {
    const kv = JSON.parse(await handoff("req-12"));
    kv.remote_port = 1; // nothing listens there
    await generate(decode, decodeInit("req-12", JSON.stringify(kv)));
    expect(await stats(c.engine("d"))).toMatchObject({ kvRecomputes: 1, promptTokensComputed: LEN });
  });

  it("answers side-channel pulls with 200 once, then 409", async () => {
    const kv = JSON.parse(await handoff("req-13"));
    const body = { request_id: "req-13", remote_engine_id: "p-kv", remote_block_ids: kv.remote_block_ids, requester: "test" };
    expect((await postJson(`${c.engine("p").url}/sim/kv/pull`, body)).status).toBe(200);
    expect((await postJson(`${c.engine("p").url}/sim/kv/pull`, body)).status).toBe(409);
    expect((await postJson(`${c.engine("p").url}/sim/kv/pull`, { ...body, request_id: "nope" })).status).toBe(409);
    expect(await stats(c.engine("p"))).toMatchObject({ kvPullsServed: 1, kvPullsRefused: 2 });
  });

  it("frees the blocks when the lease expires and then refuses the pull", async () => {
    const short = connectClient(c.engine("short"));
    const kv = await handoff("req-14", short);
    expect((await stats(c.engine("short"))).blocksPinned).toBe(3);
    await delay(160);
    expect(await stats(c.engine("short"))).toMatchObject({ blocksPinned: 0, handoffsPinned: 0, leasesExpired: 1 });
    await generate(decode, decodeInit("req-14", kv));
    expect((await stats(c.engine("short"))).kvPullsRefused).toBe(1);
    expect((await stats(c.engine("d"))).kvRecomputes).toBe(1);
  });

  it("n>1: the first child consumes the handoff, each sibling is refused and recomputes", async () => {
    const kv = await handoff("req-15");
    const r = await generate(decode, decodeInit("req-15", kv, 3));
    expect(r.completes.map((x) => x.index).sort()).toEqual([0, 1, 2]);
    const d = await stats(c.engine("d"));
    expect(d).toMatchObject({ kvSiblingHazards: 2, kvRecomputes: 2, kvPullsCompleted: 1, promptTokensComputed: 2 * LEN });
    expect(await stats(c.engine("p"))).toMatchObject({ kvPullsServed: 1, kvPullsRefused: 2 });
  });
});
