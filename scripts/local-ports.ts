// The ports of a local gateway (`npm start`) and of the simulated cluster, each settable by a
// flag or an environment variable (the flag wins), and the helpers that move the default
// cluster (sim/default-cluster.json, engines on 18100-18111, plain gRPC on 18200-18201) to
// another base port and point the gateway config at the moved engines.
import type { ClusterSpec } from "../sim/types.js";

/** Port of the first engine in sim/default-cluster.json; the others are at fixed offsets from it. */
export const DEFAULT_SIM_BASE_PORT = 18100;

export interface PortSetting {
  flag: string;
  env: string;
  fallback: number | undefined;
  what: string;
}

export const START_PORTS = {
  gateway: { flag: "--port", env: "GATEWAY_PORT", fallback: 8787, what: "the gateway (wrangler dev)" },
  inspector: { flag: "--inspector-port", env: "INSPECTOR_PORT", fallback: 9229, what: "wrangler's DevTools inspector" },
  simBase: { flag: "--sim-base-port", env: "SIM_BASE_PORT", fallback: DEFAULT_SIM_BASE_PORT, what: "the first sim engine (the others at +1, +10, +11; plain gRPC at +100, +101)" },
  simControl: { flag: "--sim-control-port", env: "SIM_CONTROL_PORT", fallback: undefined, what: "the sim control server (off unless set)" },
} satisfies Record<string, PortSetting>;

export function parsePort(value: string, where: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${where}: expected a port (1-65535), got "${value}"`);
  return port;
}

/** Reads `--flag N`, `--flag=N` or the env var. Throws on a malformed value. */
export function portSetting(setting: PortSetting, argv: string[], env: NodeJS.ProcessEnv = process.env): number | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === setting.flag) {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`${setting.flag}: expected a port`);
      return parsePort(next, setting.flag);
    }
    if (a.startsWith(`${setting.flag}=`)) return parsePort(a.slice(setting.flag.length + 1), setting.flag);
  }
  const fromEnv = env[setting.env];
  if (fromEnv !== undefined && fromEnv !== "") return parsePort(fromEnv, setting.env);
  return setting.fallback;
}

/** The cluster with every fixed port moved by the same offset, so its lowest port is `base`. */
export function moveClusterPorts(spec: ClusterSpec, base: number): ClusterSpec {
  const fixed = spec.engines.flatMap((e) => [e.port, e.grpcPort, e.bootstrapPort]).filter((p): p is number => p !== undefined && p !== 0);
  if (fixed.length === 0) return spec;
  const offset = base - Math.min(...fixed);
  const move = (p: number | undefined) => (p === undefined || p === 0 ? p : p + offset);
  for (const p of fixed) {
    if (p + offset > 65535) throw new Error(`base port ${base}: port ${p + offset} (for ${p}) is above 65535`);
  }
  return {
    ...spec,
    engines: spec.engines.map((e) => ({ ...e, port: move(e.port), grpcPort: move(e.grpcPort), bootstrapPort: move(e.bootstrapPort) })),
  };
}

/** Every fixed port of a cluster spec (HTTP, plain gRPC, bootstrap). */
export function clusterPorts(spec: ClusterSpec): number[] {
  return spec.engines.flatMap((e) => [e.port, e.grpcPort, e.bootstrapPort]).filter((p): p is number => p !== undefined && p !== 0);
}

/** clusterPorts, sorted (for messages). */
export function sortedClusterPorts(spec: ClusterSpec): number[] {
  return clusterPorts(spec).sort((a, b) => a - b);
}

/** Rewrites engine URLs on 127.0.0.1/localhost whose port is in `moved` (old port -> new port)
 *  anywhere in a gateway config JSON text. Other URLs are left alone. */
export function moveConfigEngineUrls(configText: string, moved: Map<number, number>): string {
  const config = JSON.parse(configText) as unknown;
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "url" && typeof v === "string") {
        try {
          const u = new URL(v);
          const to = moved.get(Number(u.port));
          if (to !== undefined && (u.hostname === "127.0.0.1" || u.hostname === "localhost")) {
            u.port = String(to);
            out[k] = v.endsWith("/") ? u.toString() : u.toString().replace(/\/$/, "");
            continue;
          }
        } catch {
          // not a URL: the config check reports it
        }
      }
      out[k] = visit(v);
    }
    return out;
  };
  return JSON.stringify(visit(config));
}
