// CLI: `tsx sim/main.ts [--config FILE] [--control PORT]`. Starts a cluster from a JSON spec
// (default sim/default-cluster.json) and/or the control server, prints one line per engine,
// then `sim: ready` (the start script waits for that line). SIGINT/SIGTERM shut down cleanly.
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startCluster } from "./cluster.js";
import { startControlServer } from "./control.js";
import { SpecError, validateClusterSpec } from "./spec.js";
import type { RunningCluster } from "./types.js";

const DEFAULT_CONFIG = join(dirname(fileURLToPath(import.meta.url)), "default-cluster.json");
const USAGE = "usage: tsx sim/main.ts [--config [FILE]] [--control PORT]";

interface Args {
  config?: string;
  control?: number;
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
    } else if (a === "--help" || a === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  // No arguments at all: the default cluster, which is what `npm run sim` should give.
  if (args.config === undefined && args.control === undefined) args.config = DEFAULT_CONFIG;
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
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`sim: ${signal}, shutting down`);
    await Promise.allSettled(closers.map((c) => c()));
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));

  try {
    if (args.config !== undefined) {
      const cluster = await startCluster(await loadSpec(args.config));
      closers.push(() => cluster.close());
      for (const line of describe(cluster)) console.log(line);
    }
    if (args.control !== undefined) {
      const control = await startControlServer(args.control);
      closers.push(() => control.close());
      console.log(`control ${control.url}`);
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
