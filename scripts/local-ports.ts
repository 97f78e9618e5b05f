// The ports of a local gateway (`npm start`) and of the simulated cluster, each settable by a
// flag or an environment variable (the flag wins), the instance number that moves all of them
// at once (a second gateway next to the first: `npm start -- --instance 2`), and the helpers
// that move the default cluster (sim/default-cluster.json) to another base port and point the
// gateway config at the moved engines.
import type { ClusterSpec } from "../sim/types.js";

/** Port of the first engine in sim/default-cluster.json; the others are at fixed offsets from it. */
export const DEFAULT_SIM_BASE_PORT = 18100;

export interface PortSetting {
  flag: string;
  env: string;
  fallback: number | undefined;
  what: string;
  /** How far instance N moves the default: (N - 1) * stride. */
  stride: number;
}

export const START_PORTS = {
  gateway: { flag: "--port", env: "GATEWAY_PORT", fallback: 8787, stride: 1, what: "the gateway (wrangler dev)" },
  inspector: { flag: "--inspector-port", env: "INSPECTOR_PORT", fallback: 9229, stride: 1, what: "wrangler's DevTools inspector" },
  simBase: { flag: "--sim-base-port", env: "SIM_BASE_PORT", fallback: DEFAULT_SIM_BASE_PORT, stride: 1000, what: "the first sim engine; the others keep their offsets from it" },
  simControl: { flag: "--sim-control-port", env: "SIM_CONTROL_PORT", fallback: undefined, stride: 1, what: "the sim control server (off unless set)" },
} satisfies Record<string, PortSetting>;

/** `--instance N` / GATEWAY_INSTANCE: instance 1 is the defaults; N moves every default port. */
export const INSTANCE = { flag: "--instance", env: "GATEWAY_INSTANCE", max: 40 };

export interface LocalPorts {
  instance: number;
  gateway: number;
  inspector: number;
  simBase: number;
  simControl: number | undefined;
}

/** The flag's value (`--flag N` or `--flag=N`), else the env var's, else undefined. */
function settingText(flag: string, envName: string, argv: string[], env: NodeJS.ProcessEnv): { text: string; where: string } | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === flag) {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`${flag}: expected a value`);
      return { text: next, where: flag };
    }
    if (a.startsWith(`${flag}=`)) return { text: a.slice(flag.length + 1), where: flag };
  }
  const fromEnv = env[envName];
  return fromEnv !== undefined && fromEnv !== "" ? { text: fromEnv, where: envName } : undefined;
}

export function instanceSetting(argv: string[], env: NodeJS.ProcessEnv = process.env): number {
  const given = settingText(INSTANCE.flag, INSTANCE.env, argv, env);
  if (!given) return 1;
  const n = Number(given.text);
  if (!/^\d+$/.test(given.text) || n < 1 || n > INSTANCE.max) throw new Error(`${given.where}: expected an instance number (1-${INSTANCE.max}), got "${given.text}"`);
  return n;
}

/** Every port of one `npm start`: the instance's defaults, each overridden by its own flag or env var. */
export function localPorts(argv: string[], env: NodeJS.ProcessEnv = process.env): LocalPorts {
  const instance = instanceSetting(argv, env);
  const port = (s: PortSetting) => portSetting({ ...s, fallback: s.fallback === undefined ? undefined : s.fallback + (instance - 1) * s.stride }, argv, env);
  return {
    instance,
    gateway: port(START_PORTS.gateway)!,
    inspector: port(START_PORTS.inspector)!,
    simBase: port(START_PORTS.simBase)!,
    simControl: port(START_PORTS.simControl),
  };
}

/** A table of every port a run uses: gateway, inspector, each sim engine (HTTP, plain gRPC), the control server. */
export function describePorts(ports: LocalPorts, cluster: ClusterSpec): string {
  const setBy = (s: PortSetting) => `${s.flag}, ${s.env}`;
  const rows: [string, string, string][] = [
    ["gateway (wrangler dev)", String(ports.gateway), setBy(START_PORTS.gateway)],
    ["inspector (wrangler)", String(ports.inspector), setBy(START_PORTS.inspector)],
  ];
  moveClusterPorts(cluster, ports.simBase).engines.forEach((e, i) => {
    const where = `${e.port}${e.grpcPort ? `, gRPC ${e.grpcPort}` : ""}`;
    rows.push([`sim ${e.name} (${e.role}, ${e.model ?? "sim-model"})`, where, i === 0 ? `${setBy(START_PORTS.simBase)} (all sim engines)` : ""]);
  });
  rows.push(["sim control server", ports.simControl === undefined ? "off" : String(ports.simControl), setBy(START_PORTS.simControl)]);
  const width = (col: 0 | 1) => Math.max(...rows.map((r) => r[col].length));
  return rows.map(([what, where, by]) => `  ${what.padEnd(width(0))}  ${where.padEnd(width(1))}  ${by}`.trimEnd()).join("\n");
}

export function parsePort(value: string, where: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${where}: expected a port (1-65535), got "${value}"`);
  return port;
}

/** Reads `--flag N`, `--flag=N` or the env var. Throws on a malformed value. */
export function portSetting(setting: PortSetting, argv: string[], env: NodeJS.ProcessEnv = process.env): number | undefined {
  const given = settingText(setting.flag, setting.env, argv, env);
  return given ? parsePort(given.text, given.where) : setting.fallback;
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
