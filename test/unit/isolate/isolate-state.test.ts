// What an isolate remembers lives in the IsolateState its app was created with
// (routing/isolate.ts): two apps share none of it, and the VllmEngine client cache is bounded.
import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/app.js";
import { createIsolateState } from "../../../src/routing/isolate.js";
import { EngineClients } from "../../../src/backends/engine-clients.js";
import { loadedVllmEngineClient, loadVllmEngineClient } from "../../../src/backends/vllm-engine.js";
import { selectEngines } from "../../../src/routing/select.js";
import { loadConfig } from "../../../src/config/load.js";

const engine = (name: string, port: number) => ({ name, url: `http://127.0.0.1:${port}`, transport: "openai-http" });
const CONFIG = JSON.stringify({
  models: { m: { regular: [engine("r0", 9), engine("r1", 10), engine("r2", 11)], policy: { regular: "round_robin" } } },
});
const BOUND_CONFIG = JSON.stringify({ models: { m: { regular: [{ ...engine("r0", 9), binding: "VPC" }] } } });
const EXECUTION = { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;

describe("per-isolate state", () => {
  it("a stand-in client made before the module loaded is not what the cache keeps", async () => {
    expect(loadedVllmEngineClient()).toBeUndefined(); // first in this file: the module is not in yet
    const clients = new EngineClients();
    const e = { url: "http://127.0.0.1:9", transport: "connect" };
    clients.vllmEngine(e);
    expect(clients.cachedClients).toBe(0);
    await loadVllmEngineClient();
    const real = clients.vllmEngine(e);
    expect(clients.vllmEngine(e)).toBe(real);
    expect(clients.cachedClients).toBe(1);
  });

  it("round-robin positions: each isolate's picks start at the first engine", () => {
    const config = loadConfig(CONFIG);
    const [a, b] = [createIsolateState(), createIsolateState()];
    const pick = (counters: typeof a.roundRobin) => {
      const s = selectEngines(config, "m", new Set(["openai-http"]), { counters });
      return s.kind === "regular" ? s.engine.name : s.kind;
    };
    expect([pick(a.roundRobin), pick(a.roundRobin), pick(a.roundRobin)]).toEqual(["r0", "r1", "r2"]);
    expect(pick(b.roundRobin)).toBe("r0");
    expect(pick(a.roundRobin)).toBe("r0");
  });

  it("bindings: an app sees the env it was given, another app does not", async () => {
    const [a, b] = [createIsolateState(), createIsolateState()];
    let viaBinding = 0;
    const VPC = { fetch: async () => (viaBinding++, new Response("ok")) };
    const app = createApp(a);
    expect((await app.fetch(new Request("http://gw/health"), { GATEWAY_CONFIG: BOUND_CONFIG, VPC }, EXECUTION)).status).toBe(200);
    // A request past /health (any route: the request context is built before routing) hands
    // the isolate its env; the health check itself only reads it.
    await app.fetch(new Request("http://gw/nowhere"), { GATEWAY_CONFIG: BOUND_CONFIG, VPC }, EXECUTION);
    expect(a.engines.hasFetchBinding("VPC")).toBe(true);
    expect(b.engines.hasFetchBinding("VPC")).toBe(false);
    const bound = { name: "r0", url: "http://10.0.0.1:8000", binding: "VPC" };
    expect(await (await a.engines.fetchFor(bound)("http://10.0.0.1:8000/health")).text()).toBe("ok");
    expect(viaBinding).toBe(1);
    await expect(b.engines.fetchFor(bound)("http://10.0.0.1:8000/health")).rejects.toThrow(/'r0' names the binding VPC/);
    // The other app, asked for its health with no such binding, says so.
    const other = await createApp(b).fetch(new Request("http://gw/health"), { GATEWAY_CONFIG: BOUND_CONFIG }, EXECUTION);
    expect(other.status).toBe(503);
  });

  it("VllmEngine clients: cached per isolate, not shared between isolates", async () => {
    await loadVllmEngineClient();
    const [a, b] = [createIsolateState(), createIsolateState()];
    const e = { name: "d", url: "http://127.0.0.1:9", transport: "connect" };
    expect(a.engines.vllmEngine(e)).toBe(a.engines.vllmEngine(e));
    expect(b.engines.vllmEngine(e)).not.toBe(a.engines.vllmEngine(e));
    expect(a.engines.cachedClients).toBe(1);
    expect(b.engines.cachedClients).toBe(1);
  });

  it("VllmEngine clients: at most the cap, the least recently used dropped first", async () => {
    await loadVllmEngineClient();
    const clients = new EngineClients(3);
    const e = (i: number) => ({ url: `http://127.0.0.1:${9000 + i}`, transport: "connect" });
    const first = clients.vllmEngine(e(0));
    for (let i = 1; i < 3; i++) clients.vllmEngine(e(i));
    expect(clients.vllmEngine(e(0))).toBe(first); // used again: now the most recent
    for (let i = 3; i < 50; i++) clients.vllmEngine(e(i));
    expect(clients.cachedClients).toBe(3);
    expect(clients.vllmEngine(e(0))).not.toBe(first); // dropped, made anew
    const kept = clients.vllmEngine(e(49));
    expect(clients.vllmEngine(e(49))).toBe(kept);
  });

});

describe("per-isolate metrics", () => {
  it("the dev ring and the sink's counters are the app's own", async () => {
    const [a, b] = [createIsolateState(), createIsolateState()];
    const throwing = { writeDataPoint: () => { throw new Error("down"); } };
    const env = { GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, ...JSON.parse(CONFIG) }), METRICS: throwing, DEV_METRICS: "on" };
    const body = JSON.stringify({ model: "nope", prompt: "hi" });
    const res = await createApp(a).fetch(new Request("http://gw/v1/completions", { method: "POST", body, headers: { "content-type": "application/json" } }), env, EXECUTION);
    expect(res.status).toBe(404);
    expect(a.metrics.ring.entries().length).toBeGreaterThan(0);
    expect(a.metrics.counters.writeFailures).toBe(a.metrics.ring.entries().length);
    expect(b.metrics.ring.entries()).toHaveLength(0);
    expect(b.metrics.counters.writeFailures).toBe(0);
    const recent = await createApp(b).fetch(new Request("http://gw/admin/metrics/recent"), env, EXECUTION);
    expect(await recent.json()).toMatchObject({ writeFailures: 0, points: [] });
  });
});
