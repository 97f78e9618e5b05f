// No stranded handoffs (issue 15): a decode leg that fails before admitting the request goes
// to another decode engine with the same handoff and request id, so prefill runs once and
// the blocks are pulled instead of pinned until the lease. Client-caused rejections are
// final, and so is a failure with no decode engine left.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, FAST, generate, MODEL } from "../support/pd-fixtures.js";
import type { EngineSpec } from "../../sim/types.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const spec = (name: string, role: EngineSpec["role"], extra: Partial<EngineSpec> = {}): EngineSpec => ({
  name, role, kvConnector: "NixlConnector", kvEngineId: `${name}-eng`, model: MODEL, port: 0, latency: FAST, ...extra,
});

function config(c: TestCluster, decodes: { name: string; url?: string }[], extra: Record<string, unknown> = {}) {
  return {
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: c.url("prefill") }],
        decode: decodes.map((d) => ({ name: d.name, url: d.url ?? c.url(d.name) })),
        policy: { decode: "round_robin" },
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    retry: { initial_backoff_ms: 1 },
    ...extra,
  };
}

const PROMPT = "a handoff that must not be stranded";
const generates = async (c: TestCluster, name: string) => (await c.stats(name)).generateRequests;

it("decode never reached (connection dropped): the same handoff goes to the other decode engine", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d0", "decode"), spec("d1", "decode")] });
  await cluster.setFaults("d0", { dropConnection: true });
  const gw = testGateway(config(cluster, [{ name: "d0" }, { name: "d1" }]));
  const out = await generate(gw, { requestId: "fo-drop", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 } });
  expect(out.error).toBeUndefined();
  expect(await generates(cluster, "prefill")).toBe(1);
  const d1 = await cluster.stats("d1");
  expect(d1.recent.filter((r) => r.method === "Generate").map((r) => r.requestId)).toEqual(["fo-drop"]);
  expect(d1.kvPullsCompleted).toBe(1);
  await gw.settle();
  expect((await cluster.stats("prefill")).leasesExpired).toBe(0);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("decode down (connection refused): failed over, prefill runs once", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d1", "decode")] });
  const gw = testGateway(config(cluster, [{ name: "d0", url: "http://127.0.0.1:9" }, { name: "d1" }]));
  for (let i = 0; i < 2; i++) {
    const out = await generate(gw, { requestId: `fo-down-${i}`, input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 } });
    expect(out.error).toBeUndefined();
  }
  expect(await generates(cluster, "prefill")).toBe(2);
  expect((await cluster.stats("d1")).kvPullsCompleted).toBe(2);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("no decode engine left: the error reaches the client, prefill is not run again", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill", { leaseMs: 60_000 })] });
  const gw = testGateway(config(cluster, [{ name: "d0", url: "http://127.0.0.1:9" }]));
  const out = await generate(gw, { requestId: "fo-none", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 } });
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_worker_failed_to_start");
  expect(out.error?.rawMessage).toContain("(decode engine 'd0')");
  // One prefill run, one handoff: it waits for its lease (docs/operations.md).
  expect(await generates(cluster, "prefill")).toBe(1);
  expect((await cluster.stats("prefill")).handoffsPinned).toBe(1);
});

it("a client-caused rejection (4xx) is neither failed over nor retried; the rejection frees the handoff", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d0", "decode"), spec("d1", "decode")] });
  for (const d of ["d0", "d1"]) await cluster.setFaults(d, { failStart: { code: "invalid_argument", message: "max_tokens too large" } });
  const gw = testGateway(config(cluster, [{ name: "d0" }, { name: "d1" }]));
  const out = await generate(gw, { requestId: "fo-4xx", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 } });
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_worker_failed_to_start");
  expect((await generates(cluster, "d0")) + (await generates(cluster, "d1"))).toBe(1);
  expect(await generates(cluster, "prefill")).toBe(1);
  await eventually(() => expectNoPinnedBlocks(cluster!), 2_000);
});

it("a truncated decode answer: failed over with the same handoff, nothing left pinned", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d0", "decode"), spec("d1", "decode")] });
  await cluster.setFaults("d0", { malformedResponse: "truncated" });
  const gw = testGateway(config(cluster, [{ name: "d0" }, { name: "d1" }]));
  for (let i = 0; i < 3; i++) {
    const out = await generate(gw, { requestId: `fo-trunc-${i}`, input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 } });
    expect(out.error).toBeUndefined();
  }
  expect(await generates(cluster, "prefill")).toBe(3);
  await gw.settle();
  await eventually(() => expectNoPinnedBlocks(cluster!), 2_000);
});

it("the client's Abort RPC after a decode failover reaches the decode engine now serving, not the failed one", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d0", "decode"), spec("d1", "decode")] });
  await cluster.setFaults("d0", { dropConnection: true });
  await cluster.setFaults("d1", { hang: true });
  const gw = testGateway({ ...config(cluster, [{ name: "d0" }, { name: "d1" }]), pd: { engine_info_ttl_ms: 0, deferred_abort_max_ms: 300 } });
  const done = generate(gw, { requestId: "fo-abort", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 }, stream: true });
  await eventually(async () => expect(await generates(cluster!, "d1")).toBe(1));
  await gw.engineClient().abort({ requestIds: ["fo-abort"] }, { headers: { "x-model": MODEL } });
  // d1 holds the handoff and sent no frame: its Abort waits for the cap, then ends the stream.
  const out = await done;
  expect(out.error).toBeUndefined();
  expect([...out.completes.values()].map((c) => c.value.finishReason)).toEqual(["abort"]);
  await gw.settle();
  expect((await cluster.stats("d1")).abortedRequestIds).toEqual(["fo-abort"]);
  expect((await cluster.stats("d0")).abortsReceived).toBe(0);
  expect((await cluster.stats("prefill")).abortsReceived).toBe(0);
  expect(await generates(cluster, "prefill")).toBe(1);
  await eventually(() => expectNoPinnedBlocks(cluster!), 2_000);
});

it("a token-id request beyond the model's context is refused before any engine work, once the context is known", async () => {
  cluster = await startTestCluster({ engines: [spec("prefill", "prefill"), spec("d0", "decode")] });
  const gw = testGateway(config(cluster, [{ name: "d0" }]));
  const ids = Array.from({ length: 100 }, (_, i) => 100 + i);
  // The first request teaches the isolate the context length (GetModelInfo, in the background).
  expect((await generate(gw, { requestId: "ctx-warm", input: { case: "tokenized", value: { originalText: "", inputIds: ids } }, samplingParams: { maxTokens: 4 } })).error).toBeUndefined();
  await gw.settle();
  const before = await generates(cluster, "prefill");
  const out = await generate(gw, { requestId: "ctx-over", input: { case: "tokenized", value: { originalText: "", inputIds: ids } }, samplingParams: { maxTokens: 40_000 } });
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("context_length_exceeded");
  expect(out.error?.rawMessage).toMatch(/sampling_params\.max_tokens asks for 40000/);
  expect(await generates(cluster, "prefill")).toBe(before);
  // Text input: its length is unknown here, so only an output cap that fills the context alone.
  const text = await generate(gw, { requestId: "ctx-text", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 40_000 } });
  expect(text.error?.metadata.get("x-gateway-error-code")).toBe("context_length_exceeded");
  expect(text.error?.rawMessage).toMatch(/sampling_params\.max_tokens asks for 40000, which leaves no room for the prompt/);
  expect(await generates(cluster, "prefill")).toBe(before);
});
