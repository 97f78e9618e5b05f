// The helpers behind `npm start` / `npm run sim`: moving the default cluster's ports, pointing
// the gateway config at the moved engines, port settings and instances, the port listing of
// `npm start -- --help`, and reading /health answers.
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { clusterPorts, describePorts, localPorts, moveClusterPorts, moveConfigEngineUrls, portSetting, START_PORTS } from "../../../scripts/local-ports.js";
import { probeHealth } from "../../../scripts/gateway-health.js";
import type { ClusterSpec } from "../../../sim/types.js";

const defaultCluster = JSON.parse(readFileSync("sim/default-cluster.json", "utf8")) as ClusterSpec;

describe("moveClusterPorts", () => {
  it("keeps the offsets of the default cluster", () => {
    expect(clusterPorts(moveClusterPorts(defaultCluster, 19100)).sort()).toEqual([19100, 19101, 19110, 19111, 19120, 19121, 19200, 19201, 19220, 19221]);
  });
  it("leaves free-port (0) engines alone and refuses ports above 65535", () => {
    const spec: ClusterSpec = { engines: [{ name: "a", role: "prefill", kvConnector: "none", port: 0 }, { name: "b", role: "decode", kvConnector: "none", port: 100 }] };
    expect(moveClusterPorts(spec, 200).engines.map((e) => e.port)).toEqual([0, 200]);
    expect(() => moveClusterPorts(defaultCluster, 65500)).toThrow(/above 65535/);
  });
});

describe("moveConfigEngineUrls", () => {
  it("rewrites loopback engine URLs on moved ports only", () => {
    const text = JSON.stringify({ models: { m: { prefill: [{ url: "http://127.0.0.1:18100" }], decode: [{ url: "http://127.0.0.1:9999" }, { url: "https://e.example.com:18100" }] } } });
    const moved = JSON.parse(moveConfigEngineUrls(text, new Map([[18100, 19100]]))) as { models: { m: { prefill: { url: string }[]; decode: { url: string }[] } } };
    expect(moved.models.m.prefill[0]!.url).toBe("http://127.0.0.1:19100");
    expect(moved.models.m.decode.map((e) => e.url)).toEqual(["http://127.0.0.1:9999", "https://e.example.com:18100"]);
  });
});

describe("portSetting", () => {
  it("flag wins over env, env over the default", () => {
    expect(portSetting(START_PORTS.gateway, [], {})).toBe(8787);
    expect(portSetting(START_PORTS.gateway, [], { GATEWAY_PORT: "8788" })).toBe(8788);
    expect(portSetting(START_PORTS.gateway, ["--port", "8789"], { GATEWAY_PORT: "8788" })).toBe(8789);
    expect(portSetting(START_PORTS.gateway, ["--port=8790"], {})).toBe(8790);
    expect(portSetting(START_PORTS.simControl, [], {})).toBeUndefined();
  });
  it("names the setting of a bad value", () => {
    expect(() => portSetting(START_PORTS.simBase, [], { SIM_BASE_PORT: "abc" })).toThrow(/SIM_BASE_PORT/);
    expect(() => portSetting(START_PORTS.inspector, ["--inspector-port", "70000"], {})).toThrow(/--inspector-port/);
  });
});

describe("localPorts", () => {
  it.each([
    // argv, env, expected ports
    { argv: [], env: {}, ports: { instance: 1, gateway: 8787, inspector: 9229, simBase: 18100, simControl: undefined } },
    { argv: ["--instance", "2"], env: {}, ports: { instance: 2, gateway: 8788, inspector: 9230, simBase: 19100, simControl: undefined } },
    { argv: [], env: { GATEWAY_INSTANCE: "3" }, ports: { instance: 3, gateway: 8789, inspector: 9231, simBase: 20100, simControl: undefined } },
    // A port flag or env var overrides the instance's port; the others still move.
    { argv: ["--instance=2", "--port", "9000"], env: { SIM_BASE_PORT: "30000" }, ports: { instance: 2, gateway: 9000, inspector: 9230, simBase: 30000, simControl: undefined } },
    { argv: ["--instance", "2", "--sim-control-port", "18999"], env: {}, ports: { instance: 2, gateway: 8788, inspector: 9230, simBase: 19100, simControl: 18999 } },
  ])("$argv $env", ({ argv, env, ports }) => {
    expect(localPorts(argv, env)).toEqual(ports);
  });

  it("instances do not share a port", () => {
    const all = [1, 2, 3].flatMap((n) => {
      const p = localPorts(["--instance", String(n)], {});
      return [p.gateway, p.inspector, ...clusterPorts(moveClusterPorts(defaultCluster, p.simBase))];
    });
    expect(new Set(all).size).toBe(all.length);
  });

  it("names the setting of a bad instance", () => {
    expect(() => localPorts(["--instance", "0"], {})).toThrow(/--instance: expected an instance number/);
    expect(() => localPorts([], { GATEWAY_INSTANCE: "x" })).toThrow(/GATEWAY_INSTANCE/);
    expect(() => localPorts(["--instance", "41"], {})).toThrow(/1-40/);
  });
});

describe("describePorts (npm start -- --help)", () => {
  it("lists the gateway, the inspector and every sim engine's ports", () => {
    const text = describePorts(localPorts(["--instance", "2"], {}), defaultCluster);
    for (const p of [8788, 9230, ...clusterPorts(moveClusterPorts(defaultCluster, 19100))]) expect(text).toContain(String(p));
    for (const e of defaultCluster.engines) expect(text).toContain(e.name);
    expect(text).toMatch(/sim control server\s+off/);
  });
});

describe("probeHealth", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));
  const serve = (status: number, body: string) =>
    new Promise<string>((resolve) => {
      server = createServer((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(body));
      server.listen(0, "127.0.0.1", () => {
        const addr = server!.address();
        resolve(`http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}/health`);
      });
    });

  it("up on 200", async () => {
    expect(await probeHealth(await serve(200, '{"status":"ok"}'))).toEqual({ up: true });
  });
  it("lists the errors of a 503 config_invalid", async () => {
    const url = await serve(503, JSON.stringify({ status: "config_invalid", errors: ["models: Invalid input", { path: "x" }] }));
    expect(await probeHealth(url)).toEqual({ up: false, configErrors: ["models: Invalid input", '{"path":"x"}'] });
  });
  it("keeps waiting on another 503 or no listener", async () => {
    expect(await probeHealth(await serve(503, "starting"))).toBeUndefined();
    expect(await probeHealth("http://127.0.0.1:1/health")).toBeUndefined();
  });
});
