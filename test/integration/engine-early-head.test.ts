// Streamed Generate sends its response head at the PD decision (issue 15 item 8), so a client
// that leaves during prefill is seen: the prefill leg gets its Abort and decode is never sent.
// Errors after the head travel in the end-of-stream message / trailer frame.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { decodeStream, envelope, GENERATE_URL, generateRequest } from "../support/engine-wire.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** 200 prompt tokens at 10 ms each: a 2 s prefill. */
const SLOW_PREFILL = { perPromptTokenMs: 10, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 };
/** `maxTokens`: a decode long enough to be under way when the client's leaving is seen. */
const longPrompt = (id: string, maxTokens?: number) =>
  generateRequest({ requestId: id, input: { case: "tokenized", value: { inputIds: Array.from({ length: 200 }, (_, i) => 100 + i) } }, stream: true, ...(maxTokens ? { samplingParams: { maxTokens, ignoreEos: true } } : {}) });

const PROTOCOLS = [["Connect", "application/connect+proto"], ["gRPC-web", "application/grpc-web+proto"]] as const;

/** How the client leaves: its response body cancelled (what this harness and a connection
 *  reset pass on) or request.signal (what production passes on). */
type Leaving = "body" | "signal";

/** The client's Generate during a 2 s prefill, left once prefill is under way. */
async function leaveDuringPrefill(gw: ReturnType<typeof testGateway>, contentType: string, leaving: Leaving, id: string, maxTokens?: number) {
  const client = new AbortController();
  const started = Date.now();
  const res = await gw.fetch(GENERATE_URL, { method: "POST", headers: { "content-type": contentType, "x-model": MODEL }, body: envelope(0, longPrompt(id, maxTokens)), ...(leaving === "signal" ? { signal: client.signal } : {}) });
  expect(Date.now() - started).toBeLessThan(1_000);
  expect(res.status).toBe(200);
  expect(res.headers.get("x-pd-prefill")).toBe("ran");
  // The head went out at the PD decision; the prefill call follows it (the Connect client may still be loading).
  await eventually(async () => expect((await cluster!.stats("prefill")).activeRequests).toBe(1), 1_000);
  const leftAt = Date.now();
  if (leaving === "signal") client.abort();
  await res.body!.cancel();
  return { started, leftAt };
}

// Seen at once: prefill gets its Abort within 1 s and decode is never called. The frames relay's
// body is pulled by JavaScript, so its cancel is seen; the native relay's body is the runtime's
// pipe, which tells of a cancel only at its next write, so there the client's leaving is seen on
// request.signal (production's hook) or at a keepalive write.
const SEEN_AT_ONCE = [
  ["frames", "body", undefined],
  ["native", "signal", undefined],
  ["native", "body", 100],
] as const;
for (const [protocol, contentType] of PROTOCOLS) {
  for (const [relay, leaving, keepaliveMs] of SEEN_AT_ONCE) {
    it(`${protocol}, generate_relay ${relay}, left by ${leaving}${keepaliveMs ? ` with keepalive ${keepaliveMs} ms` : ""}: the head arrives during a 2 s prefill; a client that leaves then aborts prefill within 1 s and decode is never called`, async () => {
      cluster = await startTestCluster({ engines: pairSpecs({ latency: SLOW_PREFILL }) });
      const config = pairConfig(cluster, { generateRelay: relay });
      const gw = testGateway(keepaliveMs ? { ...config, pd: { ...config.pd, stream_keepalive_ms: keepaliveMs } } : config);
      const { started, leftAt } = await leaveDuringPrefill(gw, contentType, leaving, "leaver");
      await eventually(async () => expect((await cluster!.stats("prefill")).abortedRequestIds).toEqual(["leaver"]), 1_000);
      expect(Date.now() - leftAt).toBeLessThan(1_000);
      await sleep(Math.max(0, started + 2_500 - Date.now())); // past the prefill's own end
      await gw.settle();
      expect((await cluster.stats("decode")).generateRequests).toBe(0);
      expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled" }]);
    });
  }

  // What a local FIN is like on either relay (docs/operations.md): nothing tells of the leaving
  // before the first write, decode's first frame; prefill runs to its end, decode is sent with
  // the handoff and aborted at that frame, and nothing stays pinned.
  it(`${protocol}, generate_relay native, left by body without keepalive: seen at decode's first frame; decode aborted, nothing pinned`, async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ latency: SLOW_PREFILL }) });
    const gw = testGateway(pairConfig(cluster));
    await leaveDuringPrefill(gw, contentType, "body", "late-seen", 2_000); // a 1 s decode
    await eventually(async () => expect((await cluster!.stats("decode")).abortedRequestIds).toEqual(["late-seen"]), 4_000);
    await gw.settle();
    expect((await cluster.stats("prefill")).abortedRequestIds).toEqual([]);
    await expectNoPinnedBlocks(cluster);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled" }]);
  });
}

it("an error after the head travels in the end-of-stream message with x-gateway-error-code in its metadata", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { failStart: { code: "unavailable", message: "decode down" } });
  const gw = testGateway(pairConfig(cluster));
  const res = await gw.fetch(GENERATE_URL, { method: "POST", headers: { "content-type": "application/connect+proto", "x-model": MODEL }, body: envelope(0, longPrompt("late-error")) });
  expect(res.status).toBe(200);
  expect(res.headers.get("x-pd-prefill")).toBe("ran");
  const { end } = await decodeStream(new Uint8Array(await res.arrayBuffer()), 0x02);
  const endStream = JSON.parse(end!) as { error: { code: string; message: string }; metadata: Record<string, string[]> };
  expect(endStream.error.code).toBe("unavailable");
  expect(endStream.metadata["x-gateway-error-code"]).toEqual(["decode_worker_failed_to_start"]);
});

it("a normal streamed Generate still completes with the head sent early", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const res = await gw.fetch(GENERATE_URL, { method: "POST", headers: { "content-type": "application/grpc-web+proto", "x-model": MODEL }, body: envelope(0, longPrompt("fine")) });
  const { messages, end } = await decodeStream(new Uint8Array(await res.arrayBuffer()), 0x80);
  expect(end).toMatch(/grpc-status:\s*0/);
  expect(messages.some((m) => m.response.case === "complete")).toBe(true);
  await gw.settle();
  expect((await cluster.stats("prefill")).abortsReceived).toBe(0);
});

// pd.stream_keepalive_ms: empty GenerateResponse messages between the head and the first
// message, read here by connect-es's own clients in each wire format.
for (const [protocol, binary] of [["connect", true], ["connect", false], ["grpc-web", true]] as const) {
  it(`keepalive (${protocol}, ${binary ? "binary" : "JSON"}): empty messages come during a 1 s prefill and connect-es reads the stream to its end`, async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ latency: { perPromptTokenMs: 5, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 } }) });
    const config = pairConfig(cluster);
    const gw = testGateway({ ...config, pd: { ...config.pd, stream_keepalive_ms: 100 } });
    const seen: (string | undefined)[] = [];
    const client = gw.engineClient(protocol, binary);
    for await (const m of client.generate({ requestId: `kept-${protocol}-${binary}`, input: { case: "tokenized", value: { inputIds: Array.from({ length: 200 }, (_, i) => 100 + i) } }, stream: true, samplingParams: { maxTokens: 4, ignoreEos: true } }, { headers: { "x-model": MODEL } })) {
      seen.push(m.response.case);
    }
    const keepalives = seen.findIndex((c) => c !== undefined);
    expect(keepalives).toBeGreaterThanOrEqual(5); // ~10 in a 1 s prefill
    expect(seen.slice(keepalives).every((c) => c !== undefined)).toBe(true); // none once messages flow
    expect(seen.at(-1)).toBe("complete");
  });
}

it("keepalive off (the default): no empty messages", async () => {
  cluster = await startTestCluster({ engines: pairSpecs({ latency: { perPromptTokenMs: 2, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 } }) });
  const gw = testGateway(pairConfig(cluster));
  const res = await gw.fetch(GENERATE_URL, { method: "POST", headers: { "content-type": "application/connect+proto", "x-model": MODEL }, body: envelope(0, longPrompt("no-keepalive")) });
  const { messages } = await decodeStream(new Uint8Array(await res.arrayBuffer()), 0x02);
  expect(messages.length).toBeGreaterThan(0);
  expect(messages.every((m) => m.response.case !== undefined)).toBe(true);
});
