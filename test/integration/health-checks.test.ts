// Active health checks run by the registry object against sim engines: the thresholds of the
// health state machine, both probe kinds, registry engines, disabled checks, and the alarm.
import { runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { adminGateway, alarmAt, clearRegistry, deleteAlarm, loaded, registry } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST } from "../support/pd-fixtures.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      { name: "g", role: "decode", kvConnector: "NixlConnector", model: "m", latency: FAST },
      { name: "h", role: "decode", kvConnector: "NixlConnector", model: "m", latency: FAST },
      { name: "r", role: "decode", kvConnector: "NixlConnector", model: "m", latency: FAST },
    ],
  });
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await cluster.setFaults("g", []);
  await cluster.setFaults("h", []);
  await clearRegistry();
  await deleteAlarm();
});

// Engine names are unique per test: tests in this file share the object and its health map.
let run = 0;
function setup(health: Record<string, unknown> = {}) {
  run++;
  const grpc = `grpc-${run}`;
  const http = `http-${run}`;
  const raw = {
    models: {
      m: {
        prefill: [{ name: grpc, url: cluster.url("g"), transport: "connect" }],
        decode: [{ name: http, url: cluster.url("h"), transport: "openai-http" }],
      },
    },
    health: { interval_secs: 60, timeout_secs: 2, failure_threshold: 2, success_threshold: 2, ...health },
    registry: { allowed_hosts: ["127.0.0.1"] },
  };
  return { grpc, http, raw, config: loaded(raw) };
}

describe("runHealthChecks", () => {
  it("moves an unhealthy engine to not_ready after failure_threshold probes and back after success_threshold", async () => {
    const { grpc, http, config } = setup();
    const stub = registry();
    const statuses = async () => {
      const r = await stub.runHealthChecks(config);
      expect(r.ran).toBe(true);
      return [r.health[grpc]?.status, r.health[http]?.status];
    };
    expect(await statuses()).toEqual(["pending", "pending"]);
    expect(await statuses()).toEqual(["ready", "ready"]);

    await cluster.setFaults("g", { unhealthy: true });
    await cluster.setFaults("h", { unhealthy: true });
    expect(await statuses()).toEqual(["ready", "ready"]); // one failure is below the threshold
    const down = await stub.runHealthChecks(config);
    expect(down.transitions).toEqual([
      { engine: grpc, from: "ready", to: "not_ready", error: "HealthCheck: not healthy (Engine is not alive)" },
      { engine: http, from: "ready", to: "not_ready", error: "GET /health answered 503" },
    ]);
    expect(down.health[grpc]).toMatchObject({ consecutiveFailures: 2, lastError: "HealthCheck: not healthy (Engine is not alive)" });

    await cluster.setFaults("g", []);
    await cluster.setFaults("h", []);
    expect(await statuses()).toEqual(["not_ready", "not_ready"]); // one success is not enough
    const up = await stub.runHealthChecks(config);
    expect(up.transitions.map((t) => [t.engine, t.from, t.to])).toEqual([
      [grpc, "not_ready", "ready"],
      [http, "not_ready", "ready"],
    ]);
    expect(up.health[grpc]?.lastError).toBeUndefined();
  });

  it("counts an engine that went away as failing, with the reason", async () => {
    const gone = await startTestCluster({ engines: [{ name: "x", role: "decode", kvConnector: "none" }] });
    run++;
    const name = `gone-${run}`;
    const config = loaded({
      models: { m: { regular: [{ name, url: gone.url("x") }] } },
      health: { interval_secs: 60, timeout_secs: 2, failure_threshold: 1, success_threshold: 1 },
    });
    const stub = registry();
    expect((await stub.runHealthChecks(config)).health[name]?.status).toBe("ready");
    await gone.close();
    const r = await stub.runHealthChecks(config);
    expect(r.transitions).toMatchObject([{ engine: name, from: "ready", to: "not_ready" }]);
    expect(r.health[name]?.lastError).toMatch(/^HealthCheck failed: /);
  });

  it("probes registry engines too, by id, and forgets them once removed", async () => {
    const { raw, config } = setup({ failure_threshold: 1, success_threshold: 1 });
    const gw = adminGateway(raw);
    const added = await gw.admin("POST", "/admin/engines", { name: `reg-${run}`, url: cluster.url("r"), model: "m", role: "decode" });
    expect(added.status).toBe(201);
    const stub = registry();
    const r = await stub.runHealthChecks(config);
    expect(r.probed).toBe(3);
    expect(r.health[`reg-${run}`]?.status).toBe("ready");
    // The admin API shows the engine's shared health.
    const view = (await (await gw.admin("GET", `/admin/engines/reg-${run}`)).json()) as { health: { status: string; last_probe_at: string } };
    expect(view.health.status).toBe("ready");
    expect(Date.parse(view.health.last_probe_at)).toBeGreaterThan(0);

    await gw.admin("POST", `/admin/engines/reg-${run}/drain`);
    expect((await stub.runHealthChecks(config)).probed).toBe(2); // draining engines are not probed
    await gw.admin("DELETE", `/admin/engines/reg-${run}`);
    expect((await stub.runHealthChecks(config)).health[`reg-${run}`]).toBeUndefined();
  });

  it("probes nothing when health checks are disabled", async () => {
    const { grpc, config } = setup({ disabled: true });
    const stub = registry();
    const r = await stub.runHealthChecks(config);
    expect(r).toMatchObject({ ran: false, probed: 0, transitions: [] });
    expect(r.health[grpc]).toBeUndefined();
  });
});

describe("a config engine re-pointed to another URL", () => {
  it("starts over: the old URL's not_ready health and open breaker do not follow the name", async () => {
    const { grpc, raw, config } = setup({ failure_threshold: 1 });
    const stub = registry();
    await cluster.setFaults("g", { unhealthy: true });
    expect((await stub.runHealthChecks(config)).health[grpc]?.status).toBe("not_ready");
    await stub.reportOutcomes(Array.from({ length: 10 }, () => ({ engine: grpc, status: 503 })), { ...config.breaker, failure_threshold: 2 });
    const stale = await stub.snapshot(config);
    expect(stale.unchanged ? undefined : stale.breakers[grpc]?.state).toBe("open");

    // Same name, healthy engine at another URL (a redeploy, or `npm start` restarted the sim).
    const moved = loaded({ ...raw, models: { m: { ...raw.models.m, prefill: [{ ...raw.models.m.prefill[0]!, url: cluster.url("r") }] } } });
    const fresh = await stub.snapshot(moved);
    expect(fresh.unchanged).not.toBe(true);
    expect(fresh.unchanged ? "unchanged" : fresh.health[grpc]).toBeUndefined();
    expect(fresh.unchanged ? "unchanged" : fresh.breakers[grpc]).toBeUndefined();
    expect((await stub.runHealthChecks(moved)).health[grpc]?.status).toBe("pending");
  });
});

describe("alarm", () => {
  it("is armed by the first snapshot(), probes when it fires and re-arms itself", async () => {
    const { grpc, config } = setup({ interval_secs: 30 });
    const stub = registry();
    await deleteAlarm(stub);
    const before = Date.now();
    await stub.snapshot(config);
    const armed = await alarmAt(stub);
    expect(armed).not.toBeNull();
    expect(armed!).toBeGreaterThanOrEqual(before + 30_000);
    expect(armed!).toBeLessThanOrEqual(Date.now() + 30_000);

    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const snap = await stub.snapshot(config);
    expect(snap.unchanged).not.toBe(true);
    expect(snap.unchanged ? undefined : snap.health[grpc]?.status).toBe("pending");
    const rearmed = await alarmAt(stub);
    expect(rearmed).not.toBeNull();
    expect(rearmed!).toBeGreaterThan(Date.now() + 25_000);

    // And again: every run re-arms.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const again = await stub.snapshot(config);
    expect(again.unchanged ? undefined : again.health[grpc]?.status).toBe("ready");
    expect(await alarmAt(stub)).not.toBeNull();
  });

  it("is armed by the first registration too, before any isolate asked for a snapshot", async () => {
    const { raw } = setup({ interval_secs: 30 });
    await deleteAlarm();
    const res = await adminGateway(raw).admin("POST", "/admin/engines", { name: `reg-alarm-${run}`, url: cluster.url("r"), model: "m", role: "decode" });
    expect(res.status).toBe(201);
    expect(await alarmAt()).not.toBeNull();
  });

  it("an explicit run re-arms the alarm too; with checks disabled it lapses", async () => {
    const { raw, config } = setup({ interval_secs: 5 });
    const stub = registry();
    await deleteAlarm(stub);
    await stub.runHealthChecks(config);
    const at = await alarmAt(stub);
    expect(at).not.toBeNull();
    expect(at!).toBeLessThanOrEqual(Date.now() + 5_000);

    const disabled = loaded({ ...raw, health: { ...raw.health, disabled: true } });
    await stub.snapshot(disabled);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await alarmAt(stub)).toBeNull();
  });
});
