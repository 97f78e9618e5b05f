// vLLM PR 25067, "[NIXL] Ignore abort on already-finished request": an Abort (gRPC) or a closed
// connection (OpenAI HTTP) that reaches a prefill request after it finished leaves its handoff
// pinned for a decode engine to pull or for the lease to free. A request still running is
// stopped and frees what it pinned: it never produced a handoff.
import { request } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningCluster } from "../../../sim/types.js";
import {
  FAST, cluster, collect, connectClient, genReq, generate, parseSse, prefillInit, resetAll, stats, waitFor, delay, type EngineClient,
} from "./helpers.js";

let c: RunningCluster;
let prefill: EngineClient;
let shortLease: EngineClient;
let decode: EngineClient;
let mooncake: EngineClient;
const PROMPT = Array.from({ length: 32 }, (_, i) => `f${i}`).join(" "); // 2 blocks
const SLOW_DECODE = { ...FAST, perOutputTokenMs: 5 };

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", latency: SLOW_DECODE },
    { name: "p-short", role: "prefill", kvConnector: "NixlConnector", leaseMs: 1000, latency: FAST },
    { name: "d", role: "decode", kvConnector: "NixlConnector", latency: FAST },
    { name: "mp", role: "prefill", kvConnector: "MooncakeConnector", kvEngineId: "mc-p", latency: SLOW_DECODE },
  ]);
  prefill = connectClient(c.engine("p"));
  shortLease = connectClient(c.engine("p-short"));
  decode = connectClient(c.engine("d"));
  mooncake = connectClient(c.engine("mp"));
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

const handoff = async (id: string, client = prefill) => (await generate(client, prefillInit(id, PROMPT))).completes[0]!.kvTransferParamsJson!;
const decodeInit = (id: string, kvJson: string) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 4, ignoreEos: true }, stream: true, kvTransferParamsJson: kvJson,
});
/** A prefill-form request that keeps running (long output) until it is stopped. */
const runningPrefill = (id: string, kvJson: string) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 30_000, ignoreEos: true }, stream: true, kvTransferParamsJson: kvJson,
});
const mooncakeProduce = JSON.stringify({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-run" });

describe("Abort RPC on a prefill engine", () => {
  it("an Abort of a finished prefill is ignored: its handoff stays pinned and a decode engine can still pull it", async () => {
    const kv = await handoff("done-1");
    await prefill.abort({ requestIds: ["done-1"] });
    expect(await stats(c.engine("p"))).toMatchObject({ abortsReceived: 1, abortsIgnored: 1, blocksPinned: 2, handoffsPinned: 1 });
    await generate(decode, decodeInit("done-1", kv));
    expect(await stats(c.engine("p"))).toMatchObject({ kvPullsServed: 1, blocksPinned: 0, handoffsPinned: 0, transfersRejected: 0 });
    expect(await stats(c.engine("d"))).toMatchObject({ kvPullsCompleted: 1, kvRecomputes: 0, promptTokensComputed: 0 });
  });

  it("an ignored Abort leaves the blocks to the lease", async () => {
    await handoff("done-2", shortLease);
    await shortLease.abort({ requestIds: ["done-2"] });
    expect(await stats(c.engine("p-short"))).toMatchObject({ abortsIgnored: 1, blocksPinned: 2 });
    await waitFor(async () => (await stats(c.engine("p-short"))).leasesExpired === 1, 3000, "lease expiry");
    expect(await stats(c.engine("p-short"))).toMatchObject({ blocksPinned: 0, handoffsPinned: 0 });
  });

  it("an Abort of an unknown id, or of a finished request without a handoff, ignores nothing", async () => {
    await generate(prefill, { ...prefillInit("plain-1", PROMPT), kvTransferParamsJson: undefined });
    await prefill.abort({ requestIds: ["plain-1", "never-seen"] });
    expect(await stats(c.engine("p"))).toMatchObject({ abortsReceived: 1, abortsIgnored: 0, blocksPinned: 0 });
  });

  it("an Abort of a NIXL prefill still running stops it before it produces a handoff", async () => {
    const reading = collect(prefill.generate(genReq(runningPrefill("run-1", '{"do_remote_decode":true}'))));
    await waitFor(async () => (await stats(c.engine("p"))).activeRequests === 1);
    await delay(20);
    await prefill.abort({ requestIds: ["run-1"] });
    const r = await reading;
    expect(r.completes.map((x) => x.finishReason)).toEqual(["abort"]);
    expect(r.completes[0]!.kvTransferParamsJson).toBeUndefined();
    expect(await stats(c.engine("p"))).toMatchObject({ activeRequests: 0, blocksPinned: 0, handoffsPinned: 0, abortsIgnored: 0 });
  });

  it("an Abort of a running request frees the blocks it already pinned (Mooncake pins at prompt end)", async () => {
    const reading = collect(mooncake.generate(genReq(runningPrefill("run-2", mooncakeProduce))));
    await waitFor(async () => (await stats(c.engine("mp"))).blocksPinned === 2, 3000, "pin");
    await mooncake.abort({ requestIds: ["run-2"] });
    expect((await reading).completes.map((x) => x.finishReason)).toEqual(["abort"]);
    expect(await stats(c.engine("mp"))).toMatchObject({ activeRequests: 0, blocksPinned: 0, handoffsPinned: 0, abortsIgnored: 0 });
  });

  it("a client cancel of a running request frees its blocks too", async () => {
    const ctrl = new AbortController();
    const reading = collect(mooncake.generate(genReq(runningPrefill("run-3", mooncakeProduce)), { signal: ctrl.signal })).catch(() => undefined);
    await waitFor(async () => (await stats(c.engine("mp"))).blocksPinned === 2, 3000, "pin");
    ctrl.abort();
    await reading;
    await waitFor(async () => (await stats(c.engine("mp"))).streamsCancelled === 1);
    expect(await stats(c.engine("mp"))).toMatchObject({ activeRequests: 0, blocksPinned: 0 });
  });
});

/** POSTs over a fresh, unpooled connection; `closeAfter` decides when to destroy it. */
function httpPost(
  url: string,
  body: unknown,
  closeAfter: "response" | "first-chunk",
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/completions`, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        text += d;
        if (closeAfter === "first-chunk") {
          req.destroy();
          resolve(text);
        }
      });
      res.on("end", () => {
        req.destroy();
        resolve(text);
      });
    });
    req.on("error", (err) => (closeAfter === "first-chunk" ? undefined : reject(err)));
    req.end(JSON.stringify(body));
  });
}

describe("OpenAI HTTP: closing the connection is the abort", () => {
  it("a connection closed after the prefill response completed frees nothing", async () => {
    const text = await httpPost(c.engine("p").url, {
      prompt: PROMPT, max_tokens: 1, ignore_eos: true, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
    }, "response");
    expect((JSON.parse(text) as { kv_transfer_params: unknown }).kv_transfer_params).toMatchObject({ do_remote_prefill: true });
    await delay(50);
    expect(await stats(c.engine("p"))).toMatchObject({ blocksPinned: 2, handoffsPinned: 1, streamsCancelled: 0 });
  });

  it("a connection closed while the request runs stops it and frees the blocks it pinned", async () => {
    const first = await httpPost(c.engine("mp").url, {
      prompt: PROMPT, max_tokens: 30_000, ignore_eos: true, stream: true, kv_transfer_params: { do_remote_decode: true, transfer_id: "xfer-http" },
    }, "first-chunk");
    expect(parseSse(first).length).toBeGreaterThan(0);
    await waitFor(async () => (await stats(c.engine("mp"))).streamsCancelled === 1, 3000, "cancel");
    expect(await stats(c.engine("mp"))).toMatchObject({ activeRequests: 0, blocksPinned: 0, handoffsPinned: 0 });
  });
});
