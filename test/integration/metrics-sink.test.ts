// The sink inside the Worker: a throwing METRICS binding neither breaks nor fails a request
// and is counted where a developer can see it, and the dev endpoint GET
// /admin/metrics/recent serves the points actually written only when DEV_METRICS is "on".
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { createIsolateState } from "../../src/routing/isolate.js";
import { VllmEngine } from "../../src/gen/vllm_engine_pb.js";
import type { RecentBody } from "../../src/api/admin/dev-metrics.js";
import { RecordingDataset, testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { pairConfig, pairSpecs } from "../support/pd-fixtures.js";

const PROMPT = "count the points this request writes";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/** The gateway config with an open data plane, as testGateway sets it. */
const open = (config: Record<string, unknown>) => JSON.stringify({ auth: { data_plane: "open" }, ...config });

/** A fresh app (its own isolate state: dev ring, counters) with a chosen env, METRICS
 *  included (testGateway always binds its recorder), waiting for its waitUntil work like
 *  testGateway does. */
function workerWith(env: Record<string, unknown>) {
  const pending: Promise<void>[] = [];
  const isolate = createIsolateState();
  const app = createApp(isolate);
  const doFetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(input, { ...init, redirect: "manual" }) as Request<unknown, IncomingRequestCfProperties>, env as never, ctx);
    pending.push(waitOnExecutionContext(ctx));
    return res;
  };
  const client = createClient(VllmEngine, createConnectTransport({ baseUrl: "http://gateway.test", useBinaryFormat: true, fetch: doFetch as typeof fetch }));
  return {
    isolate,
    fetch: doFetch,
    settle: () => Promise.all(pending),
    async generate(n = 1) {
      let tokens = 0;
      const stream = client.generate({ requestId: `s-${n}-${Math.random()}`, input: { case: "text", value: PROMPT }, samplingParams: { n, maxTokens: 3 }, stream: true }, { headers: { "x-model": "m" } });
      for await (const f of stream) if (f.response.case === "chunk") tokens += f.response.value.tokenIds.length;
      return tokens;
    },
    async recent(query = ""): Promise<{ status: number; body: RecentBody }> {
      const res = await doFetch(`http://gateway.test/admin/metrics/recent${query}`);
      return { status: res.status, body: (await res.json()) as RecentBody };
    },
  };
}

describe("a throwing METRICS binding", () => {
  it("does not break the request, and every failed write is counted on the dev endpoint", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    let calls = 0;
    const throwing: AnalyticsEngineDataset = {
      writeDataPoint() {
        calls++;
        throw new Error("Analytics Engine is having a bad day");
      },
    };
    const w = workerWith({ GATEWAY_CONFIG: open(pairConfig(cluster)), METRICS: throwing, DEV_METRICS: "on" });
    const before = (await w.recent()).body.writeFailures;

    expect(await w.generate()).toBeGreaterThan(0); // the client got its tokens
    await w.settle();

    expect(calls).toBeGreaterThanOrEqual(5); // engine outcomes, decision, request, stream timing
    const after = await w.recent();
    expect(after.status).toBe(200);
    expect(after.body.writeFailures - before).toBe(calls);
    // The ring holds what was handed to the binding, even though the binding threw.
    expect(after.body.points.map((p) => (p.event as { type: string }).type)).toContain("request");
  });
});

describe("GET /admin/metrics/recent", () => {
  it("with DEV_METRICS=on: the points the binding received, decoded and raw", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const recorder = new RecordingDataset();
    const w = workerWith({ GATEWAY_CONFIG: open(pairConfig(cluster)), METRICS: recorder, DEV_METRICS: "on" });
    await w.generate(4); // fan-out: prefill skipped
    await w.settle();

    const { status, body } = await w.recent();
    expect(status).toBe(200);
    expect(body).toMatchObject({ schemaVersion: "v1", capacity: 200 });
    // Exactly the points writeDataPoint got, in order (NaN serialises as null).
    expect(body.points.map((p) => p.point)).toEqual(JSON.parse(JSON.stringify(recorder.points)));
    expect(body.points.map((p) => p.event)).toEqual(recorder.events());
    const decision = body.points.find((p) => p.point.blobs?.[1] === "pd_decision")!;
    expect(decision.event).toMatchObject({ prefill: "skipped", skipReason: "fanout", n: 4 });
    expect(decision.point.doubles).toEqual([4, null, null]);
    expect(decision.point.blobs![9]).toBe("prefill_skipped");

    const filtered = await w.recent("?type=request&limit=1");
    expect(filtered.body.points).toHaveLength(1);
    expect(filtered.body.points[0]!.event).toMatchObject({ type: "request", status: 200, surface: "engine" });
  });

  it("is served even when the gateway config is invalid (it runs before config loading)", async () => {
    const w = workerWith({ GATEWAY_CONFIG: "{not json", METRICS: new RecordingDataset(), DEV_METRICS: "on" });
    expect((await w.recent()).status).toBe(200);
  });

  it("off (no DEV_METRICS, or \"off\"): 404 like any unknown path, and nothing is teed", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const unset = testGateway(pairConfig(cluster));
    const res = await unset.fetch("http://gateway.test/admin/metrics/recent");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "route_not_found" } });

    const off = workerWith({ GATEWAY_CONFIG: open(pairConfig(cluster)), METRICS: new RecordingDataset(), DEV_METRICS: "off" });
    await off.generate();
    await off.settle();
    const offRes = await off.fetch("http://gateway.test/admin/metrics/recent");
    expect(offRes.status).toBe(404);
    await offRes.body?.cancel();
    expect(off.isolate.metrics.ring.entries()).toHaveLength(0);
  });
});
