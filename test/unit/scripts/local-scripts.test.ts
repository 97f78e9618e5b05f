// The helpers behind `npm start` / `npm run sim`: moving the default cluster's ports, pointing
// the gateway config at the moved engines, port settings, and reading /health answers.
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { clusterPorts, moveClusterPorts, moveConfigEngineUrls, portSetting, START_PORTS } from "../../../scripts/local-ports.js";
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
