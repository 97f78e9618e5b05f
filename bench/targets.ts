// Starts and stops what the benchmarks measure: the simulated cluster (its own Node process,
// so it never shares an event loop with the load generator), the gateway and the bare
// pass-through Worker under `wrangler dev`, and the Portkey gateway on Node. Every process
// started here is registered with the cleanup list and stopped by pid.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, startWranglerDev, type WranglerDev } from "../scripts/wrangler-dev.js";
import type { ClusterSpec, EngineSpec } from "../sim/types.js";
import { onCleanup } from "./cleanup.js";
import type { Target } from "./http.js";
import { listeningPorts } from "./proc.js";

export interface SimProcess {
  pid: number;
  url(engine: string): string;
  grpcUrl(engine: string): string | undefined;
  stop(): Promise<void>;
}

function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
  });
}

/** Waits until `ready(line)` is true for a stdout line, or the process exits or times out. */
function waitForLine(child: ChildProcess, ready: (line: string) => boolean, what: string, timeoutMs: number, log: () => string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`${what}: not ready within ${timeoutMs} ms:\n${log()}`)), timeoutMs);
    const onData = (d: Buffer) => {
      buf += String(d);
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      if (lines.some(ready)) {
        clearTimeout(timer);
        child.stdout?.off("data", onData);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}):\n${log()}`));
    });
  });
}

export async function startSim(spec: ClusterSpec, tmp: string): Promise<SimProcess> {
  const file = join(tmp, "bench-cluster.json");
  await writeFile(file, JSON.stringify(spec, null, 2));
  const child = spawn(process.execPath, ["--import", "tsx", "sim/main.ts", "--config", file], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = () => stopChild(child);
  onCleanup("sim", stop);
  let log = "";
  child.stdout?.on("data", (d) => (log += String(d)));
  child.stderr?.on("data", (d) => (log += String(d)));
  await waitForLine(child, (l) => l.trim() === "sim: ready", "sim", 60_000, () => log);
  const urls = new Map<string, { url: string; grpc?: string }>();
  for (const line of log.split("\n")) {
    const m = /^engine (\S+) .*url=(\S+) grpc=(\S+)/.exec(line);
    if (m) urls.set(m[1]!, { url: m[2]!, ...(m[3] !== "-" ? { grpc: m[3]! } : {}) });
  }
  const get = (name: string) => {
    const e = urls.get(name);
    if (!e) throw new Error(`sim: no engine ${name}`);
    return e;
  };
  return { pid: child.pid ?? -1, url: (n) => get(n).url, grpcUrl: (n) => get(n).grpc, stop };
}

/** A sim process with only its control server: the caller creates clusters through it, and
 *  can kill them or change their network delay while they run (sim/control.ts). */
export async function startSimControl(): Promise<{ pid: number; controlUrl: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", "sim/main.ts", "--control", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  const stop = () => stopChild(child);
  onCleanup("sim-control", stop);
  let log = "";
  child.stdout?.on("data", (d) => (log += String(d)));
  child.stderr?.on("data", (d) => (log += String(d)));
  await waitForLine(child, (l) => l.trim() === "sim: ready", "sim", 60_000, () => log);
  const m = /^control (\S+)/m.exec(log);
  if (!m) throw new Error(`sim: no control url in:\n${log}`);
  return { pid: child.pid ?? -1, controlUrl: m[1]!, stop };
}

/** An engine spec with zero simulated latency: what is left is the sim's own CPU. */
export function zeroLatencyEngine(name: string, model: string, extra: Partial<EngineSpec> = {}): EngineSpec {
  return {
    name,
    role: "both",
    kvConnector: "none",
    model,
    latency: { perPromptTokenMs: 0, perOutputTokenMs: 0, perBlockPullMs: 0, pullSetupMs: 0 },
    ...extra,
  };
}

export interface WorkerTarget {
  dev: WranglerDev;
  /** The Worker's own workerd entry socket: the Worker as workerd serves it, without
   *  wrangler dev's proxy in front (a dev-only hop that production does not have). */
  target: Target;
  /** The same Worker through wrangler dev's public port (proxy workerd -> Worker workerd). */
  viaDev: Target;
  /** The workerd process that runs the Worker (its CPU and memory are the Worker's cost). */
  workerPid(): number;
  /** The wrangler dev proxy in front of it. */
  proxyPid(): number | undefined;
}

/** Of the ports the Worker's workerd listens on (entry, inspector, debug), the one that
 *  serves the Worker: it answers `healthPath` with 200. */
export async function entryPort(pid: number, healthPath: string): Promise<number> {
  for (const port of listeningPorts(pid)) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}${healthPath}`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.status === 200) return port;
    } catch {
      // not this one
    }
  }
  throw new Error(`workerd ${pid}: no listening port answers ${healthPath}`);
}

async function wrapWorker(name: string, dev: WranglerDev): Promise<WorkerTarget> {
  onCleanup(name, () => dev.stop());
  // The Worker's own workerd may be (re)started a moment after the proxy answers: wait for both.
  const deadline = Date.now() + 10_000;
  while (dev.workerd().worker === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const workerPid = () => {
    const w = dev.workerd().worker;
    if (w === undefined) throw new Error(`${name}: workerd process of the Worker not found`);
    return w;
  };
  const port = await entryPort(workerPid(), "/health");
  return {
    dev,
    target: { name, base: `http://127.0.0.1:${port}` },
    viaDev: { name: `${name} via wrangler dev`, base: dev.url },
    workerPid,
    proxyPid: () => dev.workerd().proxy,
  };
}

/** The gateway, from the frozen bundle in `buildDir` (see build.ts), with `config`. */
export async function startGateway(buildDir: string, config: unknown, name = "gateway"): Promise<WorkerTarget> {
  const dev = await startWranglerDev(config, 120_000, {
    configPath: join(buildDir, "wrangler.toml"),
    // Production-like: no dev metrics ring on the hot path.
    vars: { DEV_METRICS: "off" },
  });
  return wrapWorker(name, dev);
}

/** The pass-through Worker from `configPath` (a copy made by build.ts passthroughConfig). */
export async function startPassthrough(configPath: string, upstream: string, name = "passthrough"): Promise<WorkerTarget> {
  const dev = await startWranglerDev(undefined, 120_000, {
    configPath,
    vars: { UPSTREAM: upstream },
  });
  return wrapWorker(name, dev);
}

export interface NodePeer {
  target: Target;
  pid: number;
  inspectorPort: number;
  readyMs: number;
  stop(): Promise<void>;
}

/** The Portkey AI gateway (npm @portkey-ai/gateway) on Node, pointed at `upstream` (…/v1). */
export async function startPortkey(upstreamV1: string): Promise<NodePeer> {
  const port = await freePort();
  const inspectorPort = await freePort();
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [`--inspect=127.0.0.1:${inspectorPort}`, "node_modules/@portkey-ai/gateway/build/start-server.js", `--port=${port}`, "--headless"],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "production" } },
  );
  const stop = () => stopChild(child);
  onCleanup("portkey", stop);
  let log = "";
  child.stdout?.on("data", (d) => (log += String(d)));
  child.stderr?.on("data", (d) => (log += String(d)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`portkey exited (${child.exitCode}):\n${log}`);
    try {
      const res = await fetch(`${base}/`);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`portkey did not answer within 60 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    target: {
      name: "portkey",
      base,
      headers: { "x-portkey-provider": "openai", "x-portkey-custom-host": upstreamV1, authorization: "Bearer sk-bench" },
    },
    pid: child.pid ?? -1,
    inspectorPort,
    readyMs: performance.now() - t0,
    stop,
  };
}
