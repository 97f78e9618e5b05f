// Metrics on the VllmEngine (Connect) surface, read from the raw data points the Worker
// passed to its METRICS binding: the gating is visible in the data (durations present or
// NaN, the reason in a blob) and every request, failed or cancelled, writes one request point.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type RecordingDataset } from "../support/gateway.js";
import { startTestCluster, eventually, type TestCluster } from "../support/sim.js";
import { generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

const PROMPT = "measure this request from end to end please";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/** The raw points of one event type (blob2). */
function raw(metrics: RecordingDataset, type: string): AnalyticsEngineDataPoint[] {
  return metrics.points.filter((p) => p.blobs?.[1] === type);
}

const isDuration = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;

describe("gating visible in the data", () => {
  it("n=1 NIXL: prefill and KV-transfer durations are in the raw doubles", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "m1", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4 }, stream: true });
    expect(out.error).toBeUndefined();
    await gw.settle();

    const [decision, ...more] = raw(gw.metrics, "pd_decision");
    expect(more).toHaveLength(0);
    expect(decision!.indexes).toEqual(["m"]);
    expect(decision!.blobs).toEqual(["v1", "pd_decision", "engine", "nixl", "ran", "", "relayed", "prefill", "decode", "measured", "default"]);
    const [n, prefillMs, kvTransferMs] = decision!.doubles!;
    expect(n).toBe(1);
    expect(isDuration(prefillMs)).toBe(true);
    expect(isDuration(kvTransferMs)).toBe(true);

    expect(raw(gw.metrics, "engine_outcome").map((p) => p.blobs!.slice(2))).toEqual([["prefill", "prefill", "success"], ["decode", "decode", "success"]]);
    const [timing] = raw(gw.metrics, "stream_complete");
    expect(timing!.blobs).toEqual(["v1", "stream_complete", "engine", "generate", "measured", "measured"]);
    expect(isDuration(timing!.doubles![0])).toBe(true);
    expect(raw(gw.metrics, "request")).toHaveLength(1);
    expect(raw(gw.metrics, "kv_transfer_failure")).toHaveLength(0);
  });

  it("n=4 fan-out: both durations NaN, prefill=skipped with reason fanout, no prefill outcome", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "m4", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 }, stream: true });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    await gw.settle();

    const [decision] = raw(gw.metrics, "pd_decision");
    expect(decision!.blobs).toEqual(["v1", "pd_decision", "engine", "nixl", "skipped", "fanout", "none", "prefill", "decode", "prefill_skipped", "default"]);
    const [n, prefillMs, kvTransferMs] = decision!.doubles!;
    expect(n).toBe(4);
    expect(prefillMs).toBeNaN();
    expect(kvTransferMs).toBeNaN();
    expect(raw(gw.metrics, "engine_outcome").map((p) => p.blobs![3])).toEqual(["decode"]);
    expect(raw(gw.metrics, "request").map((p) => p.doubles![0])).toEqual([200]);
    expect((await cluster.stats("prefill")).generateRequests).toBe(0);
  });

  it("NIXL configured, prefill returns no params: failure point, prefill duration, no KV-transfer duration", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ kvConnector: "none" }) });
    const gw = testGateway(pairConfig(cluster, { prefill: { kv_connector: "NixlConnector" } }));
    const out = await generate(gw, { requestId: "m2", input: { case: "text", value: PROMPT }, stream: true });
    expect(out.error).toBeUndefined();
    await gw.settle();

    expect(raw(gw.metrics, "kv_transfer_failure")).toEqual([{ indexes: ["m"], blobs: ["v1", "kv_transfer_failure", "prefill"], doubles: [] }]);
    const [decision] = raw(gw.metrics, "pd_decision");
    expect(decision!.blobs!.slice(4)).toEqual(["ran", "", "none", "prefill", "decode", "not_injected", "default"]);
    expect(isDuration(decision!.doubles![1])).toBe(true);
    expect(decision!.doubles![2]).toBeNaN();
  });
});

describe("one request point per request", () => {
  it("a failed prefill: status and error code, no pd_decision", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code: "unavailable", message: "down" } });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "mf", input: { case: "text", value: PROMPT }, stream: true });
    expect(out.error).toBeDefined();
    await gw.settle();

    const requests = raw(gw.metrics, "request");
    expect(requests).toHaveLength(1);
    expect(requests[0]!.blobs).toEqual(["v1", "request", "engine", "generate", "pd", "true", "prefill_worker_failed_to_start"]);
    expect(requests[0]!.doubles![0]).toBe(503);
    expect(isDuration(requests[0]!.doubles![1])).toBe(true);
    // One outcome per attempt (503 is retryable, so the request may have been retried).
    const outcomes = raw(gw.metrics, "engine_outcome").map((p) => [p.blobs![3], p.blobs![4], p.doubles![0]]);
    expect(outcomes.length).toBeGreaterThanOrEqual(1);
    expect(new Set(outcomes.map((o) => JSON.stringify(o)))).toEqual(new Set([JSON.stringify(["prefill", "failure", 503])]));
    expect(raw(gw.metrics, "pd_decision")).toHaveLength(0);
    expect(raw(gw.metrics, "stream_complete")).toHaveLength(0);
  });

  async function cancelMidStream(gw: ReturnType<typeof testGateway>): Promise<AnalyticsEngineDataPoint[]> {
    const controller = new AbortController();
    let frames = 0;
    try {
      const stream = gw.engineClient().generate(
        { requestId: "mc", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 100, ignoreEos: true }, stream: true },
        { headers: { "x-model": "m" }, signal: controller.signal },
      );
      for await (const _ of stream) if (++frames === 2) controller.abort();
    } catch {
      // cancelled by us
    }
    expect(frames).toBe(2);
    await gw.settle();
    return eventually(async () => {
      const r = raw(gw.metrics, "request");
      if (r.length === 0) throw new Error("no request point yet");
      return r;
    });
  }
  const slowDecode = () => pairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 40, perBlockPullMs: 0.01 } });

  it("a stream the client cancels mid-stream: exactly one request point, no stream_complete", async () => {
    cluster = await startTestCluster({ engines: slowDecode() });
    const gw = testGateway(pairConfig(cluster));
    const requests = await cancelMidStream(gw);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.blobs!.slice(2, 6)).toEqual(["engine", "generate", "pd", "true"]);
    expect(requests[0]!.blobs![6]).not.toBe("");
    expect(raw(gw.metrics, "stream_complete")).toHaveLength(0);
    expect(raw(gw.metrics, "pd_decision")).toHaveLength(1); // decode was established before the client left
  });

  // KNOWN GAP, fix outside src/metrics. After decode's first frame a client disconnect aborts
  // decode (engine-stream.ts abortNow), and the aborted stream's ConnectError(Canceled) is
  // rethrown by the iterator's catch as if the engine had ended the stream; service.ts then
  // records httpStatusForCode(Canceled) = 400 and `connect_Canceled`. Fix: in that catch in
  // src/pd/engine-stream.ts, `if (input.clientSignal.aborted) throw clientCancelledError();`.
  // Flip to `it` when fixed.
  it("a stream the client cancels mid-stream records status 499 and client_cancelled", async () => {
    cluster = await startTestCluster({ engines: slowDecode() });
    const gw = testGateway(pairConfig(cluster));
    const [request] = await cancelMidStream(gw);
    expect(request!.doubles![0]).toBe(499);
    expect(request!.blobs![6]).toBe("client_cancelled");
  });

  it("a client that leaves during the prefill drain: status 499 client_cancelled, decode never sent", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    await cluster.setFaults("prefill", { hang: true });
    const gw = testGateway(pairConfig(cluster));
    const controller = new AbortController();
    const done = generate(gw, { requestId: "md", input: { case: "text", value: PROMPT }, stream: true }, { signal: controller.signal });
    await eventually(async () => {
      if ((await cluster!.stats("prefill")).generateRequests < 1) throw new Error("prefill not reached yet");
    });
    controller.abort();
    await done;
    await gw.settle();
    const requests = raw(gw.metrics, "request");
    expect(requests).toHaveLength(1);
    expect(requests[0]!.blobs!.slice(2)).toEqual(["engine", "generate", "pd", "true", "client_cancelled"]);
    expect(requests[0]!.doubles![0]).toBe(499);
    expect(raw(gw.metrics, "pd_decision")).toHaveLength(0);
    expect((await cluster.stats("decode")).generateRequests).toBe(0);
  });

  it("bad input on the Connect surface: a 400 request point, no engine touched", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "mb" });
    expect(out.error).toBeDefined();
    await gw.settle();
    expect(gw.metrics.points.map((p) => p.blobs![1])).toEqual(["request"]);
    expect(gw.metrics.ofType("request")).toMatchObject([{ model: "m", surface: "engine", backend: "none", status: 400, errorCode: "invalid_request" }]);
  });
});
