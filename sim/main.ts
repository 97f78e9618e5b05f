// CLI: `tsx sim/main.ts [--config FILE] [--base-port PORT] [--control PORT]`. Starts a cluster
// from a JSON spec (default sim/default-cluster.json, optionally moved to another base port)
// and/or the control server, prints one line per engine, then `sim: ready` (scripts wait for
// that line). SIGINT/SIGTERM, or the npm/tsx process that launched it exiting, shut everything
// down and print what was stopped.
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startCluster } from "./cluster.js";
import { startControlServer } from "./control.js";
import { SpecError, validateClusterSpec } from "./spec.js";
import type { RunningCluster } from "./types.js";
import { moveClusterPorts, parsePort } from "../scripts/local-ports.js";
import { watchLaunchers, processName } from "../scripts/processes.js";

const DEFAULT_CONFIG = join(dirname(fileURLToPath(import.meta.url)), "default-cluster.json");
const USAGE = "usage: tsx sim/main.ts [--config [FILE]] [--base-port PORT] [--control PORT]\n" +
  "  --base-port (or SIM_BASE_PORT): move the cluster's fixed ports so the lowest is PORT";

interface Args {
  config?: string;
  control?: number;
  basePort?: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (a === "--config") {
      // A bare --config means the default file.
      args.config = next !== undefined && !next.startsWith("--") ? (i++, next) : DEFAULT_CONFIG;
    } else if (a === "--control") {
      const port = Number(next);
      if (next === undefined || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--control: expected a port, got ${next ?? "nothing"}`);
      args.control = port;
      i++;
    } else if (a === "--base-port") {
      if (next === undefined) throw new Error("--base-port: expected a port");
      args.basePort = parsePort(next, "--base-port");
      i++;
    } else if (a === "--help" || a === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  // No arguments at all: the default cluster, which is what `npm run sim` should give.
  if (args.config === undefined && args.control === undefined) args.config = DEFAULT_CONFIG;
  const envBase = process.env.SIM_BASE_PORT;
  if (args.basePort === undefined && envBase !== undefined && envBase !== "") args.basePort = parsePort(envBase, "SIM_BASE_PORT");
  return args;
}

async function loadSpec(file: string) {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  try {
    return validateClusterSpec(json);
  } catch (err) {
    if (err instanceof SpecError) throw new Error(`${file}: ${err.message}`);
    throw err;
  }
}

function describe(cluster: RunningCluster): string[] {
  return cluster.engines.map((e) => {
    const s = e.spec;
    const parts = [`engine ${s.name}`, `role=${s.role}`, `connector=${s.kvConnector}`, `model=${s.model ?? "sim-model"}`, `url=${e.url}`];
    parts.push(`grpc=${e.grpcUrl ?? "-"}`);
    if (e.bootstrapPort !== undefined) parts.push(`bootstrap=${e.bootstrapPort}`);
    return parts.join(" ");
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const closers: (() => Promise<void>)[] = [];
  const running: string[] = [];
  let stopping = false;
  const shutdown = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`sim: ${reason}, shutting down`);
    await Promise.allSettled(closers.map((c) => c()));
    console.log(`sim: stopped ${running.length > 0 ? running.join("; ") : "nothing (not started yet)"}`);
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGHUP", () => void shutdown("SIGHUP"));
  // npm does not always pass a signal on: if the npm (or tsx) process that launched us is
  // gone, nobody is left to stop the sim, so it stops itself.
  watchLaunchers((launcher) => void shutdown(`${processName(launcher)} (pid ${launcher.pid}) exited`));

  try {
    if (args.config !== undefined) {
      let spec = await loadSpec(args.config);
      if (args.basePort !== undefined) spec = moveClusterPorts(spec, args.basePort);
      const cluster = await startCluster(spec);
      closers.push(() => cluster.close());
      for (const line of describe(cluster)) console.log(line);
      running.push(`${cluster.engines.length} engines (ports ${cluster.engines.flatMap((e) => [e.spec.port, e.spec.grpcPort, e.spec.bootstrapPort]).filter((p) => p !== undefined).join(", ")})`);
    }
    if (args.control !== undefined) {
      const control = await startControlServer(args.control);
      closers.push(() => control.close());
      console.log(`control ${control.url}`);
      running.push(`the control server (${control.url})`);
    }
  } catch (err) {
    await Promise.allSettled(closers.map((c) => c()));
    throw err;
  }
  console.log("sim: ready");
}

main().catch((err: unknown) => {
  console.error(`sim: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
