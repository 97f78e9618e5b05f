// GET /admin/engines (issue 16 item 8): config engines and registry engines alike, each with
// its source, shared health and breaker state, and this isolate's breaker and in-flight count.
import { tokenizersOf } from "../../src/api/openai/engine-generation.js";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { adminGateway, clearRegistry, deleteAlarm, registry } from "../support/admin.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generate, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

interface Listed {
  source: "config" | "registry";
  id: string;
  model: string;
  role: string;
  url: string;
  status: string;
  health: { status: string } | null;
  breaker: { state: string } | null;
  isolate: { breaker: string | null; in_flight: number };
}

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: [...pairSpecs(), { name: "d2", role: "decode", kvConnector: "NixlConnector", model: MODEL, latency: FAST }] });
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await clearRegistry();
  await deleteAlarm();
});

const config = () => ({
  ...pairConfig(cluster, { deferredAbortMaxMs: 100 }),
  registry: { allowed_hosts: ["127.0.0.1"] },
  breaker: { failure_threshold: 1, success_threshold: 1, timeout_secs: 60 },
  health: { interval_secs: 60, failure_threshold: 1, success_threshold: 1 },
});
const list = async (gw: ReturnType<typeof adminGateway>, query = "") =>
  ((await (await gw.admin("GET", `/admin/engines${query}`)).json()) as { engines: Listed[] }).engines;

it("lists config and registry engines, each with source, health, shared and isolate breaker, in-flight", async () => {
  const gw = adminGateway(config());
  expect((await gw.admin("POST", "/admin/engines", { name: "reg-d2", model: MODEL, role: "decode", url: cluster.url("d2") })).status).toBe(201);
  await registry().runHealthChecks(undefined);

  const engines = await list(gw);
  expect(engines.map((e) => [e.source, e.id, e.role])).toEqual([
    ["config", "prefill", "prefill"],
    ["config", "decode", "decode"],
    ["registry", "reg-d2", "decode"],
  ]);
  const prefill = engines[0]!;
  expect(prefill).toMatchObject({ model: MODEL, url: cluster.url("prefill"), status: "active", breaker: null, isolate: { breaker: null, in_flight: 0 } });
  expect(prefill.health?.status).toBe("ready");
  expect(engines[2]!.health?.status).toBe("ready");

  expect((await list(gw, "?source=config")).map((e) => e.id)).toEqual(["prefill", "decode"]);
  expect((await list(gw, "?source=registry")).map((e) => e.id)).toEqual(["reg-d2"]);
  expect(await list(gw, "?model=other")).toEqual([]);
  const bad = await gw.admin("GET", "/admin/engines?source=elsewhere");
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("source");
});

it("shows a request in flight on this isolate, and this isolate's breaker next to the shared one", async () => {
  const gw = adminGateway(config());
  await cluster.setFaults("decode", { hang: true });
  const controller = new AbortController();
  const running = generate(gw, { requestId: "inflight", input: { case: "text", value: "hello" }, stream: true }, { signal: controller.signal });
  await eventually(async () => {
    const decode = (await list(gw, "?source=config")).find((e) => e.id === "decode")!;
    expect(decode.isolate.in_flight).toBe(1);
  });
  controller.abort();
  await running;
  await cluster.setFaults("decode", []);
  await gw.settle();

  // A failing decode opens this isolate's breaker at once (threshold 1); the shared one follows
  // when the batched outcome report lands.
  await cluster.setFaults("decode", { failStart: { code: "unavailable" }, count: 1 });
  await generate(gw, { requestId: "fails", input: { case: "text", value: "hello" } });
  const now = (await list(gw, "?source=config")).find((e) => e.id === "decode")!;
  expect(now.isolate).toEqual({ breaker: "open", in_flight: 0 });
  await gw.settle();
  const later = (await list(gw, "?source=config")).find((e) => e.id === "decode")!;
  expect(later.breaker?.state).toBe("open");
  await cluster.setFaults("decode", []);
});

it("shows the models whose engines disagree on their tokenizer bundle (none here)", async () => {
  const gw = adminGateway(config());
  const body = (await (await gw.admin("GET", "/admin/engines")).json()) as { tokenizer_conflicts: unknown[] };
  expect(body.tokenizer_conflicts).toEqual([]);
  // The isolate's evidence feeds the view: one model whose two engines served different bundles.
  (tokenizersOf(gw.isolate) as unknown as { served: Map<string, Map<string, string>> }).served.set("m", new Map([["d1", "a".repeat(64)], ["d2", "b".repeat(64)]]));
  const after = (await (await gw.admin("GET", "/admin/engines")).json()) as { tokenizer_conflicts: unknown[] };
  expect(after.tokenizer_conflicts).toEqual([{ model: "m", engines: [{ engine: "d1", sha256: "a".repeat(64) }, { engine: "d2", sha256: "b".repeat(64) }] }]);
});

it("groups engines by cluster with each cluster's state; a registered engine carries its cluster into routing", async () => {
  const gw = adminGateway({
    ...config(),
    clusters: { a: { lat: 50, lon: 8, region: "eu" }, b: { lat: 39, lon: -77 } },
    models: {
      [MODEL]: {
        // Names of their own: earlier tests left shared breakers for "prefill" and "decode".
        prefill: [{ name: "prefill-a", url: cluster.url("prefill"), cluster: "a" }],
        decode: [{ name: "decode-a", url: cluster.url("decode"), cluster: "a" }],
      },
    },
    registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 },
  });
  const refused = await gw.admin("POST", "/admin/engines", { name: "reg-x", model: MODEL, role: "decode", url: cluster.url("d2"), cluster: "nowhere" });
  expect(refused.status).toBe(400);
  expect(((await refused.json()) as { error: { param: string } }).error.param).toBe("cluster");

  expect((await gw.admin("POST", "/admin/engines", { name: "reg-d2", model: MODEL, role: "decode", url: cluster.url("d2"), cluster: "b" })).status).toBe(201);
  type Listing = { engines: (Listed & { cluster: string })[]; clusters: { name: string; region: string | null; state: string; models: Record<string, string>; engines: string[] }[] };
  const listing = async () => (await (await gw.admin("GET", "/admin/engines")).json()) as Listing;
  await gw.settle();
  const seen = await eventually(async () => {
    await gw.settle();
    const l = await listing();
    // The routed view (config + registry snapshot) has the registered engine in b.
    expect(l.clusters.find((c) => c.name === "b")?.engines).toEqual(["reg-d2"]);
    return l;
  });
  expect(seen.engines.map((e) => [e.id, e.cluster])).toEqual([["prefill-a", "a"], ["decode-a", "a"], ["reg-d2", "b"]]);
  expect(seen.clusters).toEqual([
    { name: "a", region: "eu", lat: 50, lon: 8, state: "ready", models: { [MODEL]: "ready" }, engines: ["prefill-a", "decode-a"] },
    // A decode engine without a prefill engine cannot serve a PD request: down.
    { name: "b", region: null, lat: 39, lon: -77, state: "down", models: { [MODEL]: "down" }, engines: ["reg-d2"] },
  ]);
});
