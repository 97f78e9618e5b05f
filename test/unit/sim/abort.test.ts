// Abort and cancellation: streams end, a finished handoff survives an Abort, a decode stopped
// before its pull releases the producer's blocks, and one stopped during its pull leaves them
// pinned until the lease.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningCluster } from "../../../sim/types.js";
import {
  FAST, cluster, collect, connectClient, delay, genReq, generate, prefillInit, resetAll, stats, waitFor, type EngineClient,
} from "./helpers.js";

let c: RunningCluster;
let prefill: EngineClient;
let decode: EngineClient;
let slowPull: EngineClient;
const PROMPT = Array.from({ length: 32 }, (_, i) => `a${i}`).join(" "); // 2 blocks

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", leaseMs: 1500, latency: FAST },
    { name: "d", role: "decode", kvConnector: "NixlConnector", latency: { ...FAST, perOutputTokenMs: 5 } },
    { name: "d-slow", role: "decode", kvConnector: "NixlConnector", latency: { ...FAST, pullSetupMs: 250 } },
  ]);
  prefill = connectClient(c.engine("p"));
  decode = connectClient(c.engine("d"));
  slowPull = connectClient(c.engine("d-slow"));
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

const handoff = async (id: string) => (await generate(prefill, prefillInit(id, PROMPT))).completes[0]!.kvTransferParamsJson!;
const longInit = (id: string, kvJson?: string) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 30_000, ignoreEos: true }, stream: true, kvTransferParamsJson: kvJson,
});

describe("Abort RPC", () => {
  it("ends a running stream with an abort complete and records the ids", async () => {
    const frames: string[] = [];
    const stream = decode.generate(genReq(longInit("run-1")));
    const reading = (async () => {
      for await (const f of stream) {
        frames.push(f.response.case === "complete" ? `complete:${f.response.value.finishReason}` : "chunk");
        if (frames.length === 2) await decode.abort({ requestIds: ["run-1", "unknown-id"] });
      }
    })();
    await reading;
    expect(frames.at(-1)).toBe("complete:abort");
    expect(frames.length).toBeLessThan(10);
    const s = await stats(c.engine("d"));
    expect(s).toMatchObject({ abortsReceived: 1, abortedRequestIds: ["run-1", "unknown-id"], activeRequests: 0, streamsCancelled: 0 });
    expect(s.recent.at(-1)).toMatchObject({ method: "Abort", body: { request_ids: ["run-1", "unknown-id"] } });
  });

  it("leaves the handoff of an already-finished request pinned (vLLM PR 25067)", async () => {
    await handoff("pin-1");
    expect((await stats(c.engine("p"))).blocksPinned).toBe(2);
    await prefill.abort({ requestIds: ["pin-1"] });
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 2, handoffsPinned: 1, transfersRejected: 0, abortsIgnored: 1 });
  });

  it("a decode aborted before its pull releases the prefill's blocks (transfersRejected)", async () => {
    const kv = await handoff("rej-1");
    const run = collect(decode.generate(genReq(longInit("rej-1", kv)), { headers: { "x-sim-fault": JSON.stringify({ hang: true }) } }));
    await waitFor(async () => (await stats(c.engine("d"))).activeRequests === 1);
    await decode.abort({ requestIds: ["rej-1"] });
    const r = await run;
    expect(r.chunks).toHaveLength(0);
    expect(r.completes.map((x) => x.finishReason)).toEqual(["abort"]);
    // The release reaches the prefill engine well before its lease runs out.
    await waitFor(async () => (await stats(c.engine("p"))).transfersRejected === 1, 1000, "release");
    expect(await stats(c.engine("p"))).toMatchObject({ transfersRejected: 1, blocksPinned: 0, kvPullsServed: 0, leasesExpired: 0 });
    expect((await stats(c.engine("d"))).kvReleasesSent).toBe(1);
  });

  it("a decode that fails to start releases the prefill's blocks", async () => {
    const kv = await handoff("rej-2");
    const err = await generate(decode, longInit("rej-2", kv), { "x-sim-fault": JSON.stringify({ failStart: { code: "unavailable" } }) })
      .then(() => undefined, (e) => ConnectError.from(e));
    expect(err?.code).toBe(Code.Unavailable);
    await waitFor(async () => (await stats(c.engine("p"))).transfersRejected === 1, 1000, "release");
    expect(await stats(c.engine("p"))).toMatchObject({ transfersRejected: 1, blocksPinned: 0, leasesExpired: 0 });
  });

  it("an abort during the pull counts abortsDuringPull and leaves the blocks pinned until the lease", async () => {
    const kv = await handoff("mid-1");
    const run = collect(slowPull.generate(genReq(longInit("mid-1", kv))));
    await waitFor(async () => (await stats(c.engine("d-slow"))).activeRequests === 1);
    await delay(40);
    await slowPull.abort({ requestIds: ["mid-1"] });
    const r = await run;
    expect(r.chunks).toHaveLength(0);
    expect(r.completes[0]!.finishReason).toBe("abort");
    expect(await stats(c.engine("d-slow"))).toMatchObject({ abortsDuringPull: 1, kvReleasesSent: 0 });
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 2, transfersRejected: 0, kvPullsServed: 0 });
    await waitFor(async () => (await stats(c.engine("p"))).leasesExpired === 1, 4000, "lease expiry");
    expect((await stats(c.engine("p"))).blocksPinned).toBe(0);
  });
});

describe("client cancellation", () => {
  it("stops generation and counts streamsCancelled", async () => {
    const ctrl = new AbortController();
    const stream = decode.generate(genReq(longInit("cancel-1")), { signal: ctrl.signal });
    const reading = (async () => {
      let n = 0;
      for await (const _ of stream) if (++n === 2) ctrl.abort();
    })().catch((e) => ConnectError.from(e).code);
    expect(await reading).toBe(Code.Canceled);
    await waitFor(async () => (await stats(c.engine("d"))).streamsCancelled === 1);
    expect((await stats(c.engine("d"))).activeRequests).toBe(0);
    expect((await stats(c.engine("d"))).abortsReceived).toBe(0);
  });

  it("a decode cancelled before its pull releases the prefill's blocks", async () => {
    const kv = await handoff("cancel-2");
    const ctrl = new AbortController();
    const run = collect(decode.generate(genReq(longInit("cancel-2", kv)), { signal: ctrl.signal, headers: { "x-sim-fault": '{"hang":true}' } })).catch(() => undefined);
    await waitFor(async () => (await stats(c.engine("d"))).activeRequests === 1);
    ctrl.abort();
    await run;
    await waitFor(async () => (await stats(c.engine("p"))).transfersRejected === 1, 2000, "release");
    expect((await stats(c.engine("p"))).blocksPinned).toBe(0);
    expect((await stats(c.engine("d"))).streamsCancelled).toBe(1);
  });

  it("a client cancel during the pull counts abortsDuringPull", async () => {
    const kv = await handoff("cancel-3");
    const ctrl = new AbortController();
    const run = collect(slowPull.generate(genReq(longInit("cancel-3", kv)), { signal: ctrl.signal })).catch(() => undefined);
    await waitFor(async () => (await stats(c.engine("d-slow"))).activeRequests === 1);
    await delay(40);
    ctrl.abort();
    await run;
    await waitFor(async () => (await stats(c.engine("d-slow"))).abortsDuringPull === 1, 2000, "abortsDuringPull");
    expect((await stats(c.engine("p"))).blocksPinned).toBe(2);
  });
});
