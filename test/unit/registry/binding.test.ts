// Health probes and registration discovery reach a binding-routed engine through the binding
// (issue 19), on both kinds of engine: the private URL is never fetched directly.
import { afterAll, beforeAll, expect, it } from "vitest";
import { EngineClients } from "../../../src/backends/engine-clients.js";
import { probeEngine } from "../../../src/routing/probe.js";
import { discoverEngine } from "../../../src/routing/discovery.js";
import { cluster, FAST } from "../sim/helpers.js";
import type { RunningCluster } from "../../../sim/types.js";

let sim: RunningCluster;
const seen: string[] = [];
const engines = new EngineClients();

beforeAll(async () => {
  sim = await cluster([
    { name: "grpc", role: "decode", kvConnector: "NixlConnector", model: "m", port: 0, latency: FAST },
    { name: "http", role: "decode", kvConnector: "NixlConnector", model: "m", port: 0, latency: FAST },
  ]);
  engines.useBindings({
    VLLM_PRIVATE: {
      fetch(input: RequestInfo | URL, init?: RequestInit) {
        const url = new URL(input instanceof Request ? input.url : String(input));
        seen.push(`${url.hostname}${url.pathname}`);
        const target = new URL(url.pathname, sim.engine(url.hostname.replace(/\.internal$/, "")).url);
        return fetch(input instanceof Request ? new Request(target, input) : target, init);
      },
    },
  });
});
afterAll(async () => {
  await sim.close();
});

const via = (name: string) => ({ url: `http://${name}.internal:8000`, binding: "VLLM_PRIVATE" });
const HEALTH = { timeout_secs: 2, endpoint: "/health" };

it("health probes go through the binding (HealthCheck RPC and GET /health)", async () => {
  expect(await probeEngine({ name: "g", transport: "connect", ...via("grpc") }, HEALTH, engines)).toMatchObject({ ok: true });
  expect(await probeEngine({ name: "h", transport: "openai-http", ...via("http") }, HEALTH, engines)).toMatchObject({ ok: true });
  expect(seen).toEqual(expect.arrayContaining(["grpc.internal/vllm.grpc.engine.VllmEngine/HealthCheck", "http.internal/health"]));
});

it("registration discovery goes through the binding", async () => {
  const grpc = await discoverEngine({ transport: "connect", model: "m", ...via("grpc") }, 2, engines);
  expect(grpc.kv_connector).toBe("NixlConnector");
  const http = await discoverEngine({ transport: "openai-http", model: "m", ...via("http") }, 2, engines);
  expect(http.served_model_name ?? "m").toBe("m");
  expect(seen).toEqual(expect.arrayContaining(["grpc.internal/vllm.grpc.engine.VllmEngine/GetServerInfo", "http.internal/v1/models"]));
});

it("a binding the Worker lacks fails the probe with a message naming it", async () => {
  const r = await probeEngine({ name: "x", transport: "openai-http", url: "http://x.internal:8000", binding: "MISSING" }, HEALTH, engines);
  expect(r.ok).toBe(false);
  expect(r.error).toContain("names the binding MISSING");
});
