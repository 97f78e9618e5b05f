// Runs `wrangler dev` on a free loopback port, for end-to-end tests with independent clients
// (buf curl) and for the benchmarks (bench/): the gateway with a given config, or another
// Worker from its own wrangler.toml. It reports when /health first answered, the pids of the
// workerd processes behind it (wrangler dev runs two: a proxy on the public port and the
// Worker's own runtime), and its inspector port.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const LOG_HEAD_CHARS = 64 * 1024;
const LOG_TAIL_CHARS = 512 * 1024;

export interface WranglerDevOptions {
  /** A wrangler.toml other than the project's (passed as --config). */
  configPath?: string;
  /** Extra `--var NAME:VALUE` bindings. */
  vars?: Record<string, string>;
  /** Path probed until it answers 2xx (default /health). */
  healthPath?: string;
  /** Working directory for wrangler (default: this process's). */
  cwd?: string;
  /** Where local Durable Object state lives (--persist-to). Default: a fresh directory,
   *  removed on stop, so no run inherits the registry's health or breakers from the last. */
  persistTo?: string;
}

export interface WranglerDev {
  url: string;
  /** Pid of the wrangler CLI process. */
  pid: number;
  inspectorPort: number;
  /** Milliseconds from spawning wrangler until the health path first answered. */
  readyMs: number;
  /** workerd processes under this wrangler: `proxy` serves the public port and forwards to
   *  `worker`, the runtime that runs the Worker itself. Undefined when not found. */
  workerd(): { proxy?: number; worker?: number };
  /** Everything wrangler printed so far. */
  log(): string;
  stop(): Promise<void>;
}

function childrenOf(): Map<number, number[]> {
  const kids = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name is in parentheses and may contain spaces: the fields follow the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = kids.get(ppid) ?? [];
      list.push(Number(name));
      kids.set(ppid, list);
    } catch {
      // the process went away while we looked
    }
  }
  return kids;
}

/** Every descendant of `root`, with its command line. */
export function descendants(root: number): { pid: number; cmdline: string }[] {
  const kids = childrenOf();
  const out: { pid: number; cmdline: string }[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    for (const child of kids.get(pid) ?? []) {
      queue.push(child);
      try {
        out.push({ pid: child, cmdline: readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0").join(" ") });
      } catch {
        // gone
      }
    }
  }
  return out;
}

function findWorkerd(root: number, port: number): { proxy?: number; worker?: number } {
  const found: { proxy?: number; worker?: number } = {};
  for (const p of descendants(root)) {
    if (!/\/workerd\s+serve\b/.test(p.cmdline)) continue;
    if (p.cmdline.includes(`--socket-addr=entry=127.0.0.1:${port} `)) found.proxy = p.pid;
    else found.worker = p.pid;
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function startWranglerDev(config: unknown, timeoutMs = 90_000, options: WranglerDevOptions = {}): Promise<WranglerDev> {
  const port = await freePort();
  const inspector = await freePort();
  const args = [
    "node_modules/wrangler/bin/wrangler.js", "dev",
    "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
    "--show-interactive-dev-session=false",
  ];
  const ownState = options.persistTo === undefined ? mkdtempSync(join(tmpdir(), "vllm-edge-dev-state-")) : undefined;
  args.push("--persist-to", options.persistTo ?? ownState!);
  if (options.configPath !== undefined) args.push("--config", options.configPath);
  if (config !== undefined) args.push("--var", `GATEWAY_CONFIG:${JSON.stringify(config)}`);
  for (const [k, v] of Object.entries(options.vars ?? {})) args.push("--var", `${k}:${v}`);
  const spawnedAt = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: options.cwd ?? process.cwd(),
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
  });
  // Bounded: under heavy load wrangler logs a line per request, and an unbounded string
  // eventually exceeds V8's maximum length. The head (start-up) and a recent tail are kept.
  let head: string | undefined; // set once the log is first cut
  let log = "";
  const append = (d: unknown) => {
    log += String(d);
    if (log.length > 2 * LOG_TAIL_CHARS) {
      head ??= log.slice(0, LOG_HEAD_CHARS);
      log = log.slice(-LOG_TAIL_CHARS);
    }
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const fullLog = () => (head === undefined ? log : `${head}\n[... log truncated ...]\n${log}`);
  const url = `http://127.0.0.1:${port}`;
  let seen: { proxy?: number; worker?: number } = {};
  const workerd = () => {
    if (child.pid === undefined) return seen;
    const now = findWorkerd(child.pid, port);
    if (now.proxy !== undefined || now.worker !== undefined) seen = now;
    return now;
  };
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= new Promise<void>((resolve) => {
      const leftovers = [seen.proxy, seen.worker].filter((p): p is number => p !== undefined);
      const finish = () => {
        // wrangler normally takes its workerd processes with it; make sure of it, by pid.
        for (const pid of leftovers) if (alive(pid)) process.kill(pid, "SIGKILL");
        if (ownState) rmSync(ownState, { recursive: true, force: true });
        resolve();
      };
      if (child.exitCode !== null || child.signalCode !== null) return finish();
      child.once("exit", finish);
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
    }));
  const deadline = Date.now() + timeoutMs;
  const health = `${url}${options.healthPath ?? "/health"}`;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${fullLog()}`);
    try {
      const res = await fetch(health);
      await res.arrayBuffer();
      if (res.ok) {
        const readyMs = performance.now() - spawnedAt;
        workerd();
        return { url, pid: child.pid ?? -1, inspectorPort: inspector, readyMs, workerd, log: fullLog, stop };
      }
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`wrangler dev did not answer within ${timeoutMs} ms:\n${fullLog()}`);
}
