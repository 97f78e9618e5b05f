// The per-isolate routing snapshot against the real registry object: config-only until the
// first background refresh lands, registry engines merged in afterwards, draining engines
// left out, shared health and breaker lookups, batched outcome reports, single-flight.
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { adminGateway, clearRegistry, deleteAlarm, loaded, registry } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { RegistryView } from "../../src/routing/snapshot.js";

let view = new RegistryView();

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      { name: "p", role: "prefill", kvConnector: "NixlConnector", model: "m" },
      { name: "d", role: "decode", kvConnector: "NixlConnector", model: "m" },
      { name: "o", role: "decode", kvConnector: "none", model: "other" },
    ],
  });
});
afterAll(async () => {
  await cluster.close();
});
beforeEach(() => {
  view = new RegistryView();
});
afterEach(async () => {
  await clearRegistry();
  await deleteAlarm();
});

const raw = (extra: Record<string, unknown> = {}) => ({
  models: { m: { prefill: [{ name: "snap-p", url: cluster.url("p") }], decode: [] } },
  registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 60_000 },
  health: { interval_secs: 60, failure_threshold: 1, success_threshold: 1 },
  breaker: { failure_threshold: 2, success_threshold: 1, timeout_secs: 60 },
  ...extra,
});

/** A waitUntil that records what it was given. */
function collector() {
  const tasks: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => void tasks.push(p), tasks, settle: () => Promise.all(tasks) };
}

async function register(body: Record<string, unknown>) {
  const gw = adminGateway(raw());
  const res = await gw.admin("POST", "/admin/engines", body);
  expect(res.status).toBe(201);
  // The admin request itself went through the app, which refreshes this isolate's snapshot:
  // start each test's own snapshot from nothing.
  await gw.settle();
  view = new RegistryView();
}

it("answers config-only at once, then merges active registry engines after the background refresh", async () => {
  await register({ name: "reg-d", url: cluster.url("d"), model: "m", role: "decode" });
  await register({ name: "reg-o", url: cluster.url("o"), model: "other", role: "regular", labels: { tier: "b" } });
  const config = loaded(raw());
  const bg = collector();

  const first = view.snapshot(env, config, bg.waitUntil);
  expect(first).not.toBeInstanceOf(Promise);
  expect(first.version).toBe(0);
  expect(first.models).toBe(config.models);
  expect(first.health("snap-p")).toBeUndefined();
  expect(bg.tasks).toHaveLength(1);
  // A refresh is in flight: no second one.
  view.snapshot(env, config, bg.waitUntil);
  expect(bg.tasks).toHaveLength(1);

  await bg.settle();
  const merged = view.snapshot(env, config, bg.waitUntil);
  expect(bg.tasks).toHaveLength(1); // fresh for snapshot_ttl_ms
  expect(merged.version).toBeGreaterThan(0);
  expect(merged.models.m!.prefill.map((e) => e.name)).toEqual(["snap-p"]);
  expect(merged.models.m!.decode).toEqual([{ name: "reg-d", url: cluster.url("d"), transport: "connect", labels: {} }]);
  expect(merged.models.other).toMatchObject({
    policy: { prefill: "round_robin", decode: "round_robin", regular: "round_robin" },
    regular: [{ name: "reg-o", labels: { tier: "b" } }],
  });
  // The config itself is untouched.
  expect(config.models.m!.decode).toEqual([]);
  expect(config.models.other).toBeUndefined();
});

it("leaves draining engines out once the TTL has passed and a refresh has run", async () => {
  await register({ name: "reg-d2", url: cluster.url("d"), model: "m", role: "decode" });
  const config = loaded(raw({ registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 } }));
  const bg = collector();
  view.snapshot(env, config, bg.waitUntil);
  await bg.settle();
  expect(view.snapshot(env, config, bg.waitUntil).models.m!.decode.map((e) => e.name)).toEqual(["reg-d2"]);
  await bg.settle();

  await adminGateway(raw()).admin("POST", "/admin/engines/reg-d2/drain");
  view.snapshot(env, config, bg.waitUntil);
  await bg.settle();
  expect(view.snapshot(env, config, bg.waitUntil).models.m!.decode).toEqual([]);
  await bg.settle();
});

it("exposes the shared health and breaker state, fed by health runs and batched outcomes", async () => {
  const config = loaded(raw({ registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 } }));
  await registry().runHealthChecks(config);

  const reqs = collector();
  view.reportOutcome(env, { engine: "snap-p", status: 503 }, { config, waitUntil: reqs.waitUntil });
  view.reportOutcome(env, { engine: "snap-p", status: 503 }, { config, waitUntil: reqs.waitUntil });
  view.reportOutcome(env, { engine: "other-engine", status: 200 }, { config, waitUntil: reqs.waitUntil });
  // One flush carries all three.
  expect(reqs.tasks).toHaveLength(1);
  await reqs.settle();

  const bg = collector();
  view.snapshot(env, config, bg.waitUntil);
  await bg.settle();
  const snap = view.snapshot(env, config, bg.waitUntil);
  expect(snap.health("snap-p")?.status).toBe("ready");
  expect(snap.breaker("snap-p")).toBe("open");
  expect(snap.breaker("other-engine")).toBe("closed");
  expect(snap.breaker("never-seen")).toBeUndefined();
  await bg.settle();

  // With breakers or health checks disabled, the lookups say nothing.
  const off = loaded(raw({ breaker: { disabled: true }, health: { disabled: true } }));
  const offView = view.snapshot(env, off, bg.waitUntil);
  expect(offView.breaker("snap-p")).toBeUndefined();
  expect(offView.health("snap-p")).toBeUndefined();
  await bg.settle();
});

it("is the config alone, with no background work, without a REGISTRY binding", async () => {
  await register({ name: "reg-x", url: cluster.url("d"), model: "m", role: "decode" });
  const config = loaded(raw({ registry: { allowed_hosts: [], snapshot_ttl_ms: 0 } }));
  const bg = collector();
  const snap = view.snapshot({}, config, bg.waitUntil);
  expect(snap.models).toBe(config.models);
  expect(snap.version).toBe(0);
  view.reportOutcome({}, { engine: "snap-p", status: 503 }, { config, waitUntil: bg.waitUntil });
  expect(bg.tasks).toHaveLength(0);
});

it("publishes a new version for outcomes that change a breaker, not for successes on a clean closed one", async () => {
  const config = loaded(raw());
  const settings = config.breaker;
  const stub = registry();
  const version = async () => (await stub.snapshot(config)).version;
  const engine = `clean-${Date.now()}`;
  // A new breaker is news; then successes on it, closed with no failures, are not.
  await stub.reportOutcomes([{ engine, status: 200 }], settings);
  const v1 = await version();
  await stub.reportOutcomes([{ engine, status: 200 }, { engine, status: 200 }], settings);
  expect(await version()).toBe(v1);
  // A failure is; so is the success that ends its run.
  await stub.reportOutcomes([{ engine, status: 503 }], settings);
  const v2 = await version();
  expect(v2).toBeGreaterThan(v1);
  await stub.reportOutcomes([{ engine, status: 200 }], settings);
  const v3 = await version();
  expect(v3).toBeGreaterThan(v2);
  // Opening it (failure_threshold 2) is, and every isolate's next snapshot shows it.
  await stub.reportOutcomes([{ engine, status: 503 }, { engine, status: 503 }], settings);
  expect(await version()).toBeGreaterThan(v3);
  const bg = collector();
  const fresh = new RegistryView();
  fresh.snapshot(env, loaded(raw({ registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 } })), bg.waitUntil);
  await bg.settle();
  expect(fresh.snapshot(env, config, bg.waitUntil).breaker(engine)).toBe("open");
  await bg.settle();
});
