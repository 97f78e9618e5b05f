// Clusters (ARCHITECTURE decision 18), the real Worker in workerd against the sim: a request's
// prefill and decode engines come from one cluster on both transports, however uneven the
// clusters' health (the sim refuses and counts any pull across clusters); the nearest cluster
// serves; a cluster killed under load loses only the requests it was streaming, new ones move
// to the other cluster, and no handoff is left pinned to wait for its lease.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, MODEL } from "../support/pd-fixtures.js";
import type { EngineSpec, EngineStats } from "../../sim/types.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const NEAR_A = "50.1,8.7"; // Frankfurt
const NEAR_B = "39.0,-77.5"; // Virginia
const GEO = "x-client-geo";
const LATENCY = { perPromptTokenMs: 0.01, perOutputTokenMs: 0.3, perBlockPullMs: 0.01, pullSetupMs: 0 };

const engine = (name: string, role: EngineSpec["role"], c: "a" | "b", extra: Partial<EngineSpec> = {}): EngineSpec => ({
  name, role, kvConnector: "NixlConnector", kvEngineId: `${name}-kv`, model: MODEL, port: 0, latency: LATENCY, cluster: c, ...extra,
});
const ENGINES = ["pa0", "pa1", "da0", "da1", "pb0", "pb1", "db0", "db1"];
const clusterOf = (name: string) => (name[1] === "a" ? "a" : "b");

function specs(extra: Partial<EngineSpec> = {}): EngineSpec[] {
  return ENGINES.map((n) => engine(n, n.startsWith("p") ? "prefill" : "decode", clusterOf(n), extra));
}

function config(c: TestCluster, transport: "connect" | "openai-http", dead: string[] = [], extra: Record<string, unknown> = {}) {
  // A vLLM OpenAI server does not report its connector: the config says it.
  const connector = transport === "openai-http" ? { kv_connector: "NixlConnector" } : {};
  const entry = (n: string) => ({ name: n, url: dead.includes(n) ? "http://127.0.0.1:9" : c.url(n), transport, cluster: clusterOf(n), ...connector });
  return {
    clusters: { a: { lat: 50.1, lon: 8.7, region: "eu-central" }, b: { lat: 38.9, lon: -77.4, region: "us-east" } },
    geo: { header: GEO },
    models: {
      [MODEL]: {
        prefill: ENGINES.filter((n) => n.startsWith("p")).map(entry),
        decode: ENGINES.filter((n) => n.startsWith("d")).map(entry),
        policy: { prefill: "random", decode: "random" },
      },
    },
    pd: { engine_info_ttl_ms: 60_000 },
    retry: { initial_backoff_ms: 1, max_backoff_ms: 5 },
    ...extra,
  };
}

const allStats = async (c: TestCluster, names = ENGINES) => Promise.all(names.map((n) => c.stats(n)));
const sum = (stats: EngineStats[], key: "crossClusterPulls" | "kvPullsServed" | "handoffsPinned" | "leasesExpired" | "generateRequests") => stats.reduce((n, s) => n + (s[key] ?? 0), 0);

interface Outcome {
  ok: boolean;
  cluster: string | null;
  near: "a" | "b";
  startedAt: number;
  error?: string;
}

/** One request through the gateway on the given transport, from a client near `near`. */
async function send(gw: TestGateway, transport: "connect" | "openai-http", near: "a" | "b", id: string, maxTokens = 6): Promise<Outcome> {
  const startedAt = Date.now();
  const headers = { [GEO]: near === "a" ? NEAR_A : NEAR_B };
  if (transport === "connect") {
    const out = await generate(gw, { requestId: id, input: { case: "text", value: `a prompt for ${id} that is long enough to hand off` }, samplingParams: { maxTokens, ignoreEos: true }, stream: true }, { headers });
    return { ok: !out.error, cluster: out.header.get("x-gateway-cluster"), near, startedAt, ...(out.error ? { error: out.error.rawMessage } : {}) };
  }
  const res = await gw.fetch("http://gateway.test/v1/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: MODEL, prompt: `a prompt for ${id} that is long enough to hand off`, max_tokens: maxTokens, ignore_eos: true, stream: true }),
  });
  const text = await res.text();
  const ok = res.status === 200 && text.includes("[DONE]") && !text.includes('"error"');
  return { ok, cluster: res.headers.get("x-gateway-cluster"), near, startedAt, ...(ok ? {} : { error: `${res.status} ${text.slice(0, 200)}` }) };
}

/** `total` requests, `concurrency` at a time, clients alternating between the two places. */
async function load(gw: TestGateway, transport: "connect" | "openai-http", prefix: string, total: number, concurrency: number, near?: "a" | "b"): Promise<Outcome[]> {
  const out: Outcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        out.push(await send(gw, transport, near ?? (i % 2 === 0 ? "a" : "b"), `${prefix}-${i}`));
      }
    }),
  );
  return out;
}

describe.each(["connect", "openai-http"] as const)("over %s", (transport) => {
  it("hundreds of requests over two clusters with uneven health: no decode ever pulls another cluster's handoff", { timeout: 60_000 }, async () => {
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs() });
    // Uneven health: in a, one decode engine is gone and a prefill engine drops some
    // connections; in b, one prefill engine answers 503 to some requests before any work.
    await cluster.setFaults("pa1", { dropConnection: true, count: 15 });
    await cluster.setFaults("pb0", { failStart: { code: "unavailable", httpStatus: 503 }, count: 20 });
    const gw = testGateway(config(cluster, transport, ["da1"]));

    const outcomes = await load(gw, transport, `uneven-${transport}`, 240, 8);
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    await gw.settle();

    const stats = await allStats(cluster, ENGINES.filter((n) => n !== "da1"));
    expect(sum(stats, "crossClusterPulls")).toBe(0);
    // Both clusters handed off KV (so the check above had pulls to watch) ...
    expect(sum(stats.filter((s) => s.cluster === "a"), "kvPullsServed")).toBeGreaterThan(40);
    expect(sum(stats.filter((s) => s.cluster === "b"), "kvPullsServed")).toBeGreaterThan(40);
    // ... and each client was served by its nearest cluster, both being up.
    for (const o of outcomes) expect(o.cluster).toBe(o.near);
    await eventually(async () => expect(sum(await allStats(cluster!, ENGINES.filter((n) => n !== "da1")), "handoffsPinned")).toBe(0));
  });
});

describe("a cluster lost under load", () => {
  it.each(["connect", "openai-http"] as const)("over %s: requests move to the other cluster, only those in flight there fail, no handoff is left to expire", { timeout: 60_000 }, async (transport) => {
    // Slower tokens, so requests are mid-stream when the cluster dies.
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs({ latency: { ...LATENCY, perOutputTokenMs: 4 } }) });
    const gw = testGateway(config(cluster, transport));
    let killedAt = Number.POSITIVE_INFINITY;
    const running = load(gw, transport, `kill-${transport}`, 120, 8, "b");
    await eventually(async () => expect(sum(await allStats(cluster!, ["db0", "db1"]), "generateRequests")).toBeGreaterThan(20), 20_000);
    killedAt = Date.now();
    await cluster.killCluster("b");
    const outcomes = await running;
    await gw.settle();

    const before = outcomes.filter((o) => o.startedAt < killedAt);
    const after = outcomes.filter((o) => o.startedAt >= killedAt);
    expect(after.length).toBeGreaterThan(20);
    // Every request that started after the kill was served (by cluster a: b is gone). Over
    // HTTP the head waits for the answer, so x-gateway-cluster names the attempt that served;
    // a streamed Generate's head leaves at the PD decision (early-head.ts), before a retry on
    // another cluster could change it (docs/clusters.md).
    expect(after.filter((o) => !o.ok)).toEqual([]);
    if (transport === "openai-http") for (const o of after) expect(o.cluster).toBe("a");
    // Failures only among requests in flight at the kill: at most the load's concurrency.
    const failed = outcomes.filter((o) => !o.ok);
    expect(failed.length).toBeLessThanOrEqual(8);
    for (const o of failed) expect(o.startedAt).toBeLessThan(killedAt);
    expect(before.filter((o) => o.ok && o.cluster === "b").length).toBeGreaterThan(0);

    const survivors = await allStats(cluster, ["pa0", "pa1", "da0", "da1"]);
    expect(sum(survivors, "crossClusterPulls")).toBe(0);
    expect(sum(survivors, "kvPullsServed")).toBeGreaterThan(20);
    await eventually(async () => expect(sum(await allStats(cluster!, ["pa0", "pa1"]), "handoffsPinned")).toBe(0));
    expect(sum(survivors, "leasesExpired")).toBe(0);
  });
});

describe("cluster choice", () => {
  it("the nearest cluster serves; with its decode pool down the next one does; x-gateway-cluster says which", async () => {
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs() });
    // a's decode engines are unreachable; one failure opens a breaker.
    const gw = testGateway(config(cluster, "connect", ["da0", "da1"], { breaker: { failure_threshold: 1 } }));
    // The first request finds out: its handoff was made in a, so its decode failover stays in
    // a, and with no decode engine left there the error is final (docs/pd.md, issue 15).
    const first = await send(gw, "connect", "a", "choice-first");
    expect(first).toMatchObject({ ok: false, cluster: "a" });
    expect(first.error).toMatch(/decode engine 'da[01]'/);
    // Now a is down (both decode breakers open): clients near a are served by b.
    expect(await send(gw, "connect", "a", "choice-a")).toMatchObject({ ok: true, cluster: "b" });
    expect(await send(gw, "connect", "b", "choice-b")).toMatchObject({ ok: true, cluster: "b" });
    expect((await cluster.stats("pa0")).generateRequests + (await cluster.stats("pa1")).generateRequests).toBe(1);
    const healthy = testGateway(config(cluster, "connect"));
    expect(await send(healthy, "connect", "a", "choice-a2")).toMatchObject({ ok: true, cluster: "a" });
    const events = healthy.metrics.ofType("pd_decision");
    expect(events.map((e) => e.cluster)).toEqual(["a"]);
    expect(new Set(healthy.metrics.ofType("engine_selection").map((e) => e.cluster))).toEqual(new Set(["a"]));
  });

  it("a malformed geo header is a 400 naming it", async () => {
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs() });
    const gw = testGateway(config(cluster, "openai-http"));
    const res = await gw.fetch("http://gateway.test/v1/completions", {
      method: "POST",
      headers: { "content-type": "application/json", [GEO]: "somewhere" },
      body: JSON.stringify({ model: MODEL, prompt: "hi", max_tokens: 2 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(GEO);
  });

  it("a model in one cluster never reads the geo header: a malformed one is not refused", async () => {
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs() });
    const base = config(cluster, "openai-http");
    const pools = base.models[MODEL];
    const onlyA = { ...base, models: { [MODEL]: { ...pools, prefill: pools.prefill.filter((e) => e.cluster === "a"), decode: pools.decode.filter((e) => e.cluster === "a") } } };
    const res = await testGateway(onlyA).fetch("http://gateway.test/v1/completions", {
      method: "POST",
      headers: { "content-type": "application/json", [GEO]: "somewhere" },
      body: JSON.stringify({ model: MODEL, prompt: "hi", max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-cluster")).toBe("a");
  });

  it("sticky: a routing key keeps its cluster while it is ready, even for a client nearer the other", async () => {
    cluster = await startTestCluster({ clusters: { a: {}, b: {} }, engines: specs() });
    const gw = testGateway(config(cluster, "openai-http", [], { geo: { header: GEO, sticky: true } }));
    const ask = async (near: string) =>
      (await gw.fetch("http://gateway.test/v1/completions", {
        method: "POST",
        headers: { "content-type": "application/json", [GEO]: near, "x-routing-key": "session-1" },
        body: JSON.stringify({ model: MODEL, prompt: "hi there", max_tokens: 2 }),
      })).headers.get("x-gateway-cluster");
    expect(await ask(NEAR_B)).toBe("b");
    expect(await ask(NEAR_A)).toBe("b");
  });

  it("one cluster (no clusters configured): x-gateway-cluster is default", async () => {
    cluster = await startTestCluster({ engines: [engine("p", "prefill", "a", { cluster: undefined }), engine("d", "decode", "a", { cluster: undefined })] });
    const gw = testGateway({ models: { [MODEL]: { prefill: [{ name: "p", url: cluster.url("p") }], decode: [{ name: "d", url: cluster.url("d") }] } } });
    const out = await generate(gw, { requestId: "one", input: { case: "text", value: "hello" }, samplingParams: { maxTokens: 2 } });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-gateway-cluster")).toBe("default");
  });
});
