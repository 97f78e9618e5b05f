// Retries and selection policies through the Worker: a retryable failure moves to another
// engine, a client error does not, and each policy spreads or pins requests as it should.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generate, MODEL } from "../support/pd-fixtures.js";
import type { EngineSpec } from "../../sim/types.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const engine = (name: string, role: EngineSpec["role"]): EngineSpec => ({ name, role, kvConnector: "NixlConnector", kvEngineId: name, model: MODEL, port: 0, latency: FAST });

function config(c: TestCluster, prefill: string[], decode: string[], extra: Record<string, unknown> = {}, policy?: Record<string, string>) {
  return {
    models: {
      [MODEL]: {
        prefill: prefill.map((name) => ({ name, url: c.url(name) })),
        decode: decode.map((name) => ({ name, url: c.url(name) })),
        ...(policy ? { policy } : {}),
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    ...extra,
  };
}

describe("retries", () => {
  it("a prefill UNAVAILABLE is retried on the other prefill engine and succeeds", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", { failStart: { code: "unavailable", message: "down" } });
    const gw = testGateway(config(cluster, ["p0", "p1"], ["d0"]));
    for (let i = 0; i < 4; i++) {
      const out = await generate(gw, { requestId: `r${i}`, input: { case: "text", value: "retry me please" } });
      expect(out.error).toBeUndefined();
      expect(out.header.get("x-pd-prefill")).toBe("ran");
    }
    expect((await cluster.stats("p1")).generateRequests).toBe(4);
    expect((await cluster.stats("d0")).generateRequests).toBe(4);
    const p0 = (await cluster.stats("p0")).generateRequests;
    expect(p0).toBeGreaterThanOrEqual(1); // round-robin sent some first attempts there
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome").filter((e) => e.engine === "p0").every((e) => e.status === 503)).toBe(true);
  });

  it("a 400 is not retried", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", { failStart: { code: "invalid_argument" } });
    await cluster.setFaults("p1", { failStart: { code: "invalid_argument" } });
    const gw = testGateway(config(cluster, ["p0", "p1"], ["d0"]));
    const out = await generate(gw, { requestId: "bad", input: { case: "text", value: "x" } });
    expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_worker_failed_to_start");
    const total = (await cluster.stats("p0")).generateRequests + (await cluster.stats("p1")).generateRequests;
    expect(total).toBe(1);
  });

  it("retries can be disabled", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", { failStart: { code: "unavailable" } });
    const gw = testGateway(config(cluster, ["p0"], ["d0"], { retry: { disabled: true } }));
    await generate(gw, { requestId: "once", input: { case: "text", value: "x" } });
    expect((await cluster.stats("p0")).generateRequests).toBe(1);
  });
});

describe("circuit breaker", () => {
  it("opens after the failure threshold, so the failing engine stops receiving traffic", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", { failStart: { code: "unavailable" } });
    const gw = testGateway(config(cluster, ["p0", "p1"], ["d0"], { breaker: { failure_threshold: 2, timeout_secs: 60 } }));
    for (let i = 0; i < 10; i++) await generate(gw, { requestId: `b${i}`, input: { case: "text", value: "breaker" } });
    expect((await cluster.stats("p0")).generateRequests).toBe(2);
    expect((await cluster.stats("p1")).generateRequests).toBe(10);
  });
});

describe("policies", () => {
  async function spread(policy: Record<string, string>, requests: { id: string; text: string; key?: string }[]) {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("p2", "prefill"), engine("d0", "decode")] });
    const gw = testGateway(config(cluster, ["p0", "p1", "p2"], ["d0"], {}, policy));
    for (const r of requests) {
      const out = await generate(gw, { requestId: r.id, input: { case: "text", value: r.text } }, { headers: r.key ? { "x-routing-key": r.key } : {} });
      expect(out.error).toBeUndefined();
    }
    const byEngine: Record<string, string[]> = {};
    for (const name of ["p0", "p1", "p2"]) {
      byEngine[name] = (await cluster.stats(name)).recent.filter((x) => x.method === "Generate").map((x) => x.requestId!);
    }
    return byEngine;
  }

  it("round_robin alternates", async () => {
    const by = await spread({ prefill: "round_robin" }, Array.from({ length: 6 }, (_, i) => ({ id: `rr${i}`, text: `prompt ${i}` })));
    expect(Object.values(by).map((ids) => ids.length)).toEqual([2, 2, 2]);
  });

  it("prefix_hash sends equal prefixes to the same engine", async () => {
    const reqs = Array.from({ length: 9 }, (_, i) => ({ id: `ph${i}`, text: `shared system prompt number ${i % 3}` }));
    const by = await spread({ prefill: "prefix_hash" }, reqs);
    for (let prefix = 0; prefix < 3; prefix++) {
      const owners = Object.entries(by).filter(([, ids]) => ids.some((id) => Number(id.slice(2)) % 3 === prefix));
      expect(owners).toHaveLength(1);
      expect(owners[0]![1].filter((id) => Number(id.slice(2)) % 3 === prefix)).toHaveLength(3);
    }
  });

  it("consistent_hash pins a routing key to one engine", async () => {
    const reqs = Array.from({ length: 8 }, (_, i) => ({ id: `ch${i}`, text: `different ${i}`, key: i % 2 === 0 ? "session-a" : "session-b" }));
    const by = await spread({ prefill: "consistent_hash" }, reqs);
    const owner = (key: string) => Object.entries(by).filter(([, ids]) => ids.some((id) => reqs.find((r) => r.id === id)!.key === key)).map(([e]) => e);
    expect(owner("session-a")).toHaveLength(1);
    expect(owner("session-b")).toHaveLength(1);
  });

  it("random and power_of_two use every engine over many requests", async () => {
    const reqs = Array.from({ length: 24 }, (_, i) => ({ id: `rnd${i}`, text: `p ${i}` }));
    const by = await spread({ prefill: "random" }, reqs);
    expect(Object.values(by).every((ids) => ids.length > 0)).toBe(true);
  });
});

describe("power_of_two with engine-reported loads", () => {
  it("avoids the engine whose GetLoads shows a queue", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("d0", "decode"), engine("d1", "decode")] });
    // Five requests stuck on d1, sent to it directly (not through the gateway).
    const stuck = new AbortController();
    const body = JSON.stringify({ requestId: "stuck", text: "stuck", stream: true });
    const frame = new Uint8Array(5 + body.length);
    new DataView(frame.buffer).setUint32(1, body.length);
    frame.set(new TextEncoder().encode(body), 5);
    for (let i = 0; i < 5; i++) {
      void fetch(`${cluster.url("d1")}/vllm.grpc.engine.VllmEngine/Generate`, {
        method: "POST",
        headers: { "content-type": "application/connect+json", "x-sim-fault": JSON.stringify({ hang: true }) },
        body: frame,
        signal: stuck.signal,
      }).catch(() => undefined);
    }
    const gw = testGateway(config(cluster, ["p0"], ["d0", "d1"], { loads: { enabled: true, ttl_ms: 60_000 } }, { decode: "power_of_two" }));
    await generate(gw, { requestId: "warm", input: { case: "text", value: "warm up the polls" } });
    await gw.settle();
    await cluster.reset("d0");
    for (let i = 0; i < 6; i++) await generate(gw, { requestId: `p2-${i}`, input: { case: "text", value: `load ${i}` } });
    expect((await cluster.stats("d0")).generateRequests).toBe(6);
    stuck.abort();
  });
});
