// Engines added at run time take traffic: the request path routes from the per-isolate
// registry snapshot (config merged with the registry), refreshed in the background.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { adminGateway, clearRegistry, deleteAlarm, loaded, registry } from "../support/admin.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, MODEL } from "../support/pd-fixtures.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      { name: "p", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p", model: MODEL },
      { name: "d0", role: "decode", kvConnector: "NixlConnector", model: MODEL },
      { name: "d1", role: "decode", kvConnector: "NixlConnector", model: MODEL },
    ],
  });
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await clearRegistry();
  await deleteAlarm();
});

it("a decode engine registered through the admin API joins the rotation", async () => {
  const gw = adminGateway({
    models: { [MODEL]: { prefill: [{ name: "p", url: cluster.url("p") }], decode: [{ name: "d0", url: cluster.url("d0") }] } },
    registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 },
    health: { interval_secs: 3600 },
    pd: { engine_info_ttl_ms: 0 },
  });
  const res = await gw.admin("POST", "/admin/engines", { name: "d1", url: cluster.url("d1"), model: MODEL, role: "decode" });
  expect(res.status).toBe(201);
  // The snapshot refreshes in the background (waitUntil); requests keep flowing meanwhile.
  let i = 0;
  await eventually(async () => {
    const out = await generate(gw, { requestId: `reg-${i++}`, input: { case: "text", value: "join the pool" } });
    expect(out.error).toBeUndefined();
    await gw.settle();
    expect((await cluster.stats("d1")).generateRequests).toBeGreaterThan(0);
  }, 10_000, 50);
  expect((await cluster.stats("d0")).generateRequests).toBeGreaterThan(0);
});

it("a drained registry engine stops receiving new requests", async () => {
  const gw = adminGateway({
    models: { [MODEL]: { prefill: [{ name: "p", url: cluster.url("p") }], decode: [] } },
    registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 },
    health: { interval_secs: 3600 },
    pd: { engine_info_ttl_ms: 0 },
  });
  const created = await gw.admin("POST", "/admin/engines", { name: "d1", url: cluster.url("d1"), model: MODEL, role: "decode" });
  const { id } = (await created.json()) as { id: string };
  await eventually(async () => {
    const out = await generate(gw, { requestId: `drain-warm-${Date.now()}`, input: { case: "text", value: "warm" } });
    await gw.settle();
    expect(out.error).toBeUndefined();
  }, 10_000, 50);
  expect((await gw.admin("POST", `/admin/engines/${id}/drain`)).status).toBeLessThan(300);
  await eventually(async () => {
    const out = await generate(gw, { requestId: `drained-${Date.now()}`, input: { case: "text", value: "after drain" } });
    await gw.settle();
    expect(out.error?.metadata.get("x-gateway-error-code")).toBe("no_engine_available");
  }, 10_000, 50);
});

it("an engine failing its health checks leaves the rotation and returns after recovery", async () => {
  const raw = {
    models: { [MODEL]: { prefill: [{ name: "p", url: cluster.url("p") }], decode: [{ name: "d0", url: cluster.url("d0") }, { name: "d1", url: cluster.url("d1") }] } },
    registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 },
    health: { interval_secs: 3600, failure_threshold: 2, success_threshold: 1 },
    pd: { engine_info_ttl_ms: 0 },
  };
  const gw = adminGateway(raw);
  const config = loaded(raw);
  const sendFour = async (tag: string) => {
    await cluster.reset();
    for (let i = 0; i < 4; i++) {
      const out = await generate(gw, { requestId: `${tag}-${i}`, input: { case: "text", value: "health" } });
      expect(out.error).toBeUndefined();
      await gw.settle();
    }
    return [(await cluster.stats("d0")).generateRequests, (await cluster.stats("d1")).generateRequests];
  };
  await cluster.setFaults("d1", { unhealthy: true });
  await registry().runHealthChecks(config);
  await registry().runHealthChecks(config);
  // Let the background refresh pick up the new health, then only d0 takes traffic.
  await eventually(async () => expect((await sendFour("sick"))[1]).toBe(0), 10_000, 50);
  await cluster.setFaults("d1", []);
  await registry().runHealthChecks(config);
  await eventually(async () => expect((await sendFour("well"))[1]).toBeGreaterThan(0), 10_000, 50);
});
