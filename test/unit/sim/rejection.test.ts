// vLLM PR 41269 (and the gRPC servicer's _notify_kv_transfer_rejected): a decode engine that
// refuses a do_remote_prefill request before admitting it tells the prefill engine that owns
// the handoff, which frees the blocks at once. A decode engine that is never reached frees
// nothing: the handoff waits for its lease.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, connectClient, generate, postJson, prefillInit, resetAll, stats, waitFor, type EngineClient } from "./helpers.js";

let c: RunningCluster;
let prefill: EngineClient;
let decode: EngineClient;
const PROMPT = Array.from({ length: 32 }, (_, i) => `r${i}`).join(" "); // 2 blocks
const LEASE_MS = 1000;

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", leaseMs: LEASE_MS, latency: FAST },
    { name: "d", role: "decode", kvConnector: "NixlConnector", latency: FAST },
    { name: "mp", role: "prefill", kvConnector: "MooncakeConnector", kvEngineId: "mc-p", leaseMs: LEASE_MS, latency: FAST },
    { name: "md", role: "decode", kvConnector: "MooncakeConnector", kvEngineId: "mc-d", latency: FAST },
  ]);
  prefill = connectClient(c.engine("p"));
  decode = connectClient(c.engine("d"));
});
afterAll(() => c.close());
beforeEach(async () => {
  await Promise.all(c.engines.map((e) => fetch(`${e.url}/sim/faults`, { method: "DELETE" })));
  await resetAll(c);
});

const handoff = async (id: string) => (await generate(prefill, prefillInit(id, PROMPT))).completes[0]!.kvTransferParamsJson!;
const errOf = (p: Promise<unknown>) => p.then(() => undefined, (e) => ConnectError.from(e));
const decodeInit = (id: string, kvJson: string, sampling: Record<string, unknown> = {}) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 4, ignoreEos: true, ...sampling },
  stream: true, kvTransferParamsJson: kvJson,
});
/** The prefill engine freed the handoff because of the decode's notice, not the lease. */
async function expectFreedByRejection(prefillName = "p", decodeName = "d"): Promise<void> {
  expect(await stats(c.engine(prefillName))).toMatchObject({ transfersRejected: 1, blocksPinned: 0, handoffsPinned: 0, leasesExpired: 0, kvPullsServed: 0 });
  expect(await stats(c.engine(decodeName))).toMatchObject({ kvReleasesSent: 1, promptTokensComputed: 0, activeRequests: 0 });
}

describe("gRPC decode rejects before admission", () => {
  it("max_tokens beyond the context window: InvalidArgument, and the prefill's handoff is freed at once", async () => {
    const kv = await handoff("ctx-1");
    const err = await errOf(generate(decode, decodeInit("ctx-1", kv, { maxTokens: 32_768 })));
    expect(err?.code).toBe(Code.InvalidArgument);
    await expectFreedByRejection();
  });

  it.each([
    ["n above the limit", { samplingParams: { maxTokens: 4, n: 257 } }],
    ["an empty prompt", { input: { case: "text" as const, value: "" } }],
    ["max_tokens 0 (bad params)", { samplingParams: { maxTokens: 0 } }],
  ])("%s: the handoff is freed", async (_what, override) => {
    const kv = await handoff("bad-1");
    const err = await errOf(generate(decode, { ...decodeInit("bad-1", kv), ...override }));
    expect(err?.code).toBe(Code.InvalidArgument);
    await expectFreedByRejection();
  });

  it("an engine error before start (failStart fault on the decode leg) frees it", async () => {
    await postJson(`${c.engine("d").url}/sim/faults`, { failStart: { code: "internal" }, leg: "decode", count: 1 });
    const kv = await handoff("err-1");
    expect((await errOf(generate(decode, decodeInit("err-1", kv))))?.code).toBe(Code.Internal);
    await expectFreedByRejection();
  });

  it("params that are themselves invalid name no owner: nothing is freed until the lease", async () => {
    await handoff("json-1");
    const err = await errOf(generate(decode, decodeInit("json-1", "{not json")));
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(await stats(c.engine("p"))).toMatchObject({ transfersRejected: 0, blocksPinned: 2 });
    expect((await stats(c.engine("d"))).kvReleasesSent).toBe(0);
  });

  it("Mooncake: the rejection reaches the owner through its bootstrap address", async () => {
    const mp = connectClient(c.engine("mp"));
    const md = connectClient(c.engine("md"));
    await generate(mp, { ...prefillInit("mc-1", PROMPT), kvTransferParamsJson: JSON.stringify({ do_remote_decode: true, transfer_id: "xfer-rej" }) });
    expect((await stats(c.engine("mp"))).blocksPinned).toBe(2);
    const kv = { do_remote_prefill: true, transfer_id: "xfer-rej", remote_engine_id: "mc-p", remote_bootstrap_addr: `127.0.0.1:${c.engine("mp").bootstrapPort}` };
    const err = await errOf(generate(md, decodeInit("mc-1", JSON.stringify(kv), { maxTokens: 40_000 })));
    expect(err?.code).toBe(Code.InvalidArgument);
    await expectFreedByRejection("mp", "md");
  });
});

describe("OpenAI decode rejects before admission", () => {
  const body = (kv: unknown, extra: Record<string, unknown> = {}) => ({ prompt: PROMPT, max_tokens: 4, ignore_eos: true, kv_transfer_params: kv, ...extra });

  it("400 for max_tokens beyond max_model_len frees the handoff", async () => {
    const kv = JSON.parse(await handoff("http-1")) as unknown;
    const r = await postJson(`${c.engine("d").url}/v1/completions`, body(kv, { max_tokens: 32_768 }), { "x-request-id": "http-1" });
    expect(r.status).toBe(400);
    await expectFreedByRejection();
  });

  it("404 for an unknown model (the model check) frees it too", async () => {
    const kv = JSON.parse(await handoff("http-2")) as unknown;
    const r = await postJson(`${c.engine("d").url}/v1/completions`, body(kv, { model: "other-model" }), { "x-request-id": "http-2" });
    expect(r.status).toBe(404);
    await expectFreedByRejection();
  });
});

describe("a decode engine that is never reached", () => {
  it("a connection dropped before the request is read frees nothing: the handoff waits for its lease", async () => {
    await postJson(`${c.engine("d").url}/sim/faults`, { dropConnection: true, count: 1 });
    const kv = await handoff("drop-1");
    const pinnedAt = Date.now();
    expect(await errOf(generate(decode, decodeInit("drop-1", kv)))).toBeInstanceOf(ConnectError);
    expect(await stats(c.engine("d"))).toMatchObject({ connectionsDropped: 1, generateRequests: 0, kvReleasesSent: 0 });
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 2, transfersRejected: 0 });
    await waitFor(async () => (await stats(c.engine("p"))).leasesExpired === 1, 3000, "lease expiry");
    expect(Date.now() - pinnedAt).toBeGreaterThanOrEqual(LEASE_MS - 50);
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 0, transfersRejected: 0 });
  });

  it("a refused connection frees nothing either", async () => {
    const closed = await cluster([{ name: "gone", role: "decode", kvConnector: "NixlConnector", latency: FAST }]);
    const gone = connectClient(closed.engine("gone"));
    await closed.close();
    const kv = await handoff("refused-1");
    expect(await errOf(generate(gone, decodeInit("refused-1", kv)))).toBeInstanceOf(ConnectError);
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 2, handoffsPinned: 1, transfersRejected: 0 });
  });
});
