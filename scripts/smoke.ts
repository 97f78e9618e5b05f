// `npm run smoke`: what a newcomer does after cloning, scripted. Starts `npm start` (gateway +
// sim) on free ports, runs every README example that talks to it (curl, buf curl, the OpenAI
// SDK snippet) and checks each answered as the README says, then sends SIGTERM to the top
// process (npm) and checks that every process it started is gone and no port is left
// listening, and that the admin token showed on no process's command line. The examples are read from README.md itself; EXPECTATIONS below says what each
// must answer, and the run fails when the README has an example this list does not know, or
// the list has an entry the README no longer shows. Bounded (SMOKE_DEADLINE_MS); exits non-zero
// on any failure.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./wrangler-dev.js";
import { describeProcesses, descendantsOf, isRunning, listProcesses, processName, type ProcessInfo } from "./processes.js";
import { clusterPorts } from "./local-ports.js";
import type { ClusterSpec } from "../sim/types.js";

/** The admin token the smoke run starts the gateway with, and the README examples read from
 *  $ADMIN_TOKEN. Unique per run, so finding it on a command line means this run put it there. */
const SMOKE_ADMIN_TOKEN = `smoke-${randomBytes(8).toString("hex")}`;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOST = "127.0.0.1";
const SMOKE_DEADLINE_MS = 110_000;
const READY_TIMEOUT_MS = 75_000;
const COMMAND_TIMEOUT_MS = 30_000;
const SHUTDOWN_LIMIT_MS = 5_000;
/** The README's ports, which the smoke run replaces with free ones. */
const README_GATEWAY = "127.0.0.1:8787";
const README_SIM_BASE = 18100;
/** Offsets of the default cluster's ports from its base (sim/default-cluster.json). */
const SIM_PORT_OFFSETS = clusterPorts(JSON.parse(readFileSync(join(ROOT, "sim/default-cluster.json"), "utf8")) as ClusterSpec).map((p) => p - README_SIM_BASE);

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const log = (msg: string) => console.log(`smoke [${elapsed()}]: ${msg}`);

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Expectation {
  /** Short name for progress output. */
  name: string;
  /** Picks the README example this entry checks. */
  matches: (example: string) => boolean;
  /** Throws with what is wrong. */
  check: (r: Result) => void;
}

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

function bufMessages(stdout: string): Record<string, Record<string, unknown>>[] {
  return stdout.split(/\n(?=\{)/).filter((s) => s.trim()).map((s) => JSON.parse(s) as Record<string, Record<string, unknown>>);
}

const EXPECTATIONS: Expectation[] = [
  {
    name: "buf curl gRPC-web fan-out (n=4) skips prefill",
    matches: (c) => c.includes("buf curl --protocol grpcweb") && c.includes('"n":4'),
    check: (r) => {
      expect(r.code === 0, `buf curl exited ${r.code}`);
      expect(/x-pd-prefill: skipped; reason=fanout/i.test(r.stderr), "no 'x-pd-prefill: skipped; reason=fanout' response header");
      const completes = bufMessages(r.stdout).filter((m) => m.complete);
      expect(completes.length === 4, `expected 4 completions (n=4), got ${completes.length}`);
    },
  },
  {
    name: "buf curl Connect n=1 runs prefill",
    matches: (c) => c.includes("buf curl --protocol connect"),
    check: (r) => {
      expect(r.code === 0, `buf curl exited ${r.code}`);
      expect(/x-pd-prefill: ran/i.test(r.stderr), "no 'x-pd-prefill: ran' response header");
      expect(bufMessages(r.stdout).some((m) => m.complete), "no complete message");
    },
  },
  {
    name: "HealthCheck over Connect JSON",
    matches: (c) => c.includes("VllmEngine/HealthCheck"),
    check: (r) => {
      const body = JSON.parse(r.stdout) as { healthy?: boolean };
      expect(body.healthy === true, `expected {"healthy":true,...}, got ${r.stdout.trim()}`);
    },
  },
  {
    name: "prefill engine /sim/stats",
    matches: (c) => c.includes("/sim/stats"),
    check: (r) => {
      const stats = JSON.parse(r.stdout) as { engine?: string; promptTokensComputed?: number };
      expect(stats.engine === "prefill-0", `expected the stats of prefill-0, got ${r.stdout.slice(0, 200)}`);
      expect((stats.promptTokensComputed ?? 0) > 0, "the prefill engine computed no prompt tokens (the Connect n=1 example should have run its prefill leg)");
    },
  },
  {
    name: "OpenAI chat n=3 fan-out skips prefill",
    matches: (c) => c.includes("/v1/chat/completions") && c.includes('"n":3'),
    check: (r) => {
      const [head = "", body = ""] = r.stdout.split(/\r?\n\r?\n/, 2);
      expect(/^HTTP\/[\d.]+ 200/.test(head), `expected HTTP 200, got ${head.split("\n")[0]}`);
      expect(/x-pd-prefill: skipped; reason=fanout/i.test(head), "no 'x-pd-prefill: skipped; reason=fanout' header");
      const choices = (JSON.parse(r.stdout.slice(head.length).trim() || body) as { choices?: unknown[] }).choices ?? [];
      expect(choices.length === 3, `expected 3 choices, got ${choices.length}`);
    },
  },
  {
    name: "OpenAI streamed completion with usage",
    matches: (c) => c.includes("/v1/completions") && c.includes('"stream":true'),
    check: (r) => {
      const events = r.stdout.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
      expect(events.at(-1) === "[DONE]", "the stream did not end with data: [DONE]");
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices?: { text?: string }[]; usage?: { completion_tokens?: number } });
      expect(chunks.some((c) => c.choices?.some((ch) => ch.text)), "no text in the stream");
      expect(chunks.some((c) => (c.usage?.completion_tokens ?? 0) > 0), "no usage chunk (stream_options.include_usage)");
    },
  },
  {
    name: "Responses API, stored",
    matches: (c) => c.includes("/v1/responses"),
    check: (r) => {
      const body = JSON.parse(r.stdout) as { id?: string; object?: string; store?: boolean; output?: { content?: { text?: string }[] }[] };
      expect(body.object === "response" && /^resp_/.test(body.id ?? ""), `expected a response object, got ${r.stdout.slice(0, 200)}`);
      expect(body.store === true, "the response was not stored (is the RESPONSES binding missing?)");
      expect((body.output?.[0]?.content?.[0]?.text ?? "").length > 0, "no output text");
    },
  },
  {
    name: "Anthropic Messages API, streamed",
    matches: (c) => c.includes("/v1/messages"),
    check: (r) => {
      const events = r.stdout.split("\n").filter((l) => l.startsWith("event: ")).map((l) => l.slice(7));
      expect(events[0] === "message_start" && events.at(-1) === "message_stop", `expected message_start ... message_stop, got ${events.join(",").slice(0, 200)}`);
      expect(events.includes("content_block_delta"), "no content_block_delta event");
    },
  },
  {
    name: "OpenAI tool call and reasoning on VllmEngine engines",
    matches: (c) => c.includes("/v1/chat/completions") && c.includes('"tools"'),
    check: (r) => {
      const body = JSON.parse(r.stdout) as { choices?: { finish_reason?: string; message?: { reasoning?: string; tool_calls?: { function?: { name?: string; arguments?: string } }[] } }[] };
      const choice = body.choices?.[0];
      const call = choice?.message?.tool_calls?.[0]?.function;
      expect(choice?.finish_reason === "tool_calls", `expected finish_reason "tool_calls", got ${r.stdout.slice(0, 300)}`);
      expect(call?.name === "get_weather" && call.arguments === '{"city":"Paris"}', `expected get_weather({"city":"Paris"}), got ${JSON.stringify(call)}`);
      expect(choice?.message?.reasoning === "The user wants the weather.", `expected the reasoning split off, got ${JSON.stringify(choice?.message?.reasoning)}`);
    },
  },
  {
    name: "dev metrics: the last events",
    matches: (c) => c.includes("/admin/metrics/recent"),
    check: (r) => {
      const parsed = JSON.parse(r.stdout) as unknown;
      // Without jq installed the runner drops the `| jq ...` filter and checks the raw answer.
      const events = Array.isArray(parsed) ? parsed : ((parsed as { points?: { event?: unknown }[] }).points ?? []).map((p) => p.event);
      const typed = events.filter((e) => typeof (e as { type?: unknown } | null)?.type === "string");
      expect(events.length > 0 && typed.length === events.length, `expected the last events (objects with a "type"), got ${r.stdout.trim().slice(0, 200)}`);
    },
  },
  {
    name: "OpenAI SDK snippet (chat n=2, streamed completion)",
    matches: (c) => c.includes('from "openai"'),
    check: (r) => {
      expect(r.code === 0, `exited ${r.code}: ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
      // console.log of the choices array (possibly over several lines), then the streamed text.
      const end = r.stdout.indexOf("]\n");
      const printed = r.stdout.slice(0, end + 1);
      const strings = printed.match(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g) ?? [];
      expect(printed.trimStart().startsWith("[") && strings.length === 2, `expected the 2 choices printed as an array, got ${r.stdout.slice(0, 200)}`);
      expect(r.stdout.slice(end + 2).trim().length > 0, "the streamed completion printed nothing");
    },
  },
];

/** The README's examples against `npm start`: shell commands (continuation lines joined,
 *  comments dropped) that name the gateway or a sim engine, and the OpenAI SDK snippet. */
export function readmeExamples(readme: string): { kind: "sh" | "ts"; text: string }[] {
  const out: { kind: "sh" | "ts"; text: string }[] = [];
  for (const block of readme.matchAll(/```(sh|ts)\n([\s\S]*?)```/g)) {
    const [, kind, body] = block as unknown as [string, "sh" | "ts", string];
    if (kind === "ts") {
      if (body.includes('from "openai"') && body.includes(README_GATEWAY)) out.push({ kind, text: body });
      continue;
    }
    const commands: string[] = [];
    let current = "";
    for (const raw of body.split("\n")) {
      const line = raw.replace(/\s+$/, "");
      if (current === "" && (line.trim() === "" || line.trim().startsWith("#"))) continue;
      if (line.endsWith("\\")) {
        current += line.slice(0, -1) + " ";
        continue;
      }
      commands.push((current + line).trim());
      current = "";
    }
    for (const c of commands) {
      if (c.includes(README_GATEWAY) || c.includes(`127.0.0.1:${README_SIM_BASE}/`)) out.push({ kind, text: c });
    }
  }
  return out;
}

function withPorts(text: string, gatewayPort: number, simBase: number): string {
  return text.replaceAll(README_GATEWAY, `${HOST}:${gatewayPort}`).replace(/127\.0\.0\.1:(\d+)/g, (m, p: string) => {
    const offset = Number(p) - README_SIM_BASE;
    return SIM_PORT_OFFSETS.includes(offset) ? `${HOST}:${simBase + offset}` : m;
  });
}

function run(file: string, args: string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: ROOT, encoding: "utf8", timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ADMIN_TOKEN: SMOKE_ADMIN_TOKEN, PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH}` } },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : null) : 0;
        resolve({ code, stdout, stderr: stderr + (err && code === null ? `\n${err.message}` : "") });
      },
    );
  });
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: HOST });
    socket.setTimeout(1_000);
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("timeout", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

async function freeSimBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const busy = await Promise.all(SIM_PORT_OFFSETS.map((o) => isListening(base + o)));
    if (!busy.some(Boolean)) return base;
  }
  throw new Error("found no free block of ports for the sim");
}

/** Listening TCP ports of the given pids, from `ss -ltnpH` (empty if ss is not installed). */
async function listeningPortsOf(pids: Set<number>): Promise<number[]> {
  const r = await run("ss", ["-ltnpH"], 5_000);
  if (r.code !== 0) return [];
  const ports = new Set<number>();
  for (const line of r.stdout.split("\n")) {
    const port = /:(\d+)\s+\S+:\*/.exec(line)?.[1];
    const owners = [...line.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
    if (port && owners.some((p) => pids.has(p))) ports.add(Number(port));
  }
  return [...ports].sort((a, b) => a - b);
}

async function main(): Promise<number> {
  const failures: string[] = [];
  const fail = (msg: string) => {
    failures.push(msg);
    log(`FAIL ${msg}`);
  };
  const deadline = setTimeout(() => {
    log(`FAIL did not finish within ${SMOKE_DEADLINE_MS / 1000} s`);
    cleanup();
    process.exit(1);
  }, SMOKE_DEADLINE_MS);

  // 1. The README's examples, each with exactly one expectation.
  const examples = readmeExamples(readFileSync(join(ROOT, "README.md"), "utf8"));
  const plan: { text: string; kind: "sh" | "ts"; expectation: Expectation }[] = [];
  for (const ex of examples) {
    const found = EXPECTATIONS.filter((e) => e.matches(ex.text));
    if (found.length !== 1) fail(`README example ${found.length === 0 ? "has no entry in EXPECTATIONS (scripts/smoke.ts)" : "matches several EXPECTATIONS"}: ${ex.text.split("\n")[0]}`);
    else plan.push({ ...ex, expectation: found[0]! });
  }
  for (const e of EXPECTATIONS) if (!plan.some((p) => p.expectation === e)) fail(`the README no longer shows the example "${e.name}" (remove it from EXPECTATIONS in scripts/smoke.ts, or restore it)`);
  log(`${plan.length} README examples to run`);

  // 2. npm start on free ports.
  const gatewayPort = await freePort();
  const inspectorPort = await freePort();
  const simBase = await freeSimBase();
  log(`npm start (gateway ${gatewayPort}, inspector ${inspectorPort}, sim ${simBase}-${simBase + Math.max(...SIM_PORT_OFFSETS)}) ...`);
  let output = "";
  const npmStart: ChildProcess = spawn("npm", ["start"], {
    cwd: ROOT,
    env: { ...process.env, ADMIN_TOKEN: SMOKE_ADMIN_TOKEN, GATEWAY_PORT: String(gatewayPort), INSPECTOR_PORT: String(inspectorPort), SIM_BASE_PORT: String(simBase), GATEWAY_STATE_DIR: join(ROOT, ".wrangler", `state-smoke-${process.pid}`) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  npmStart.stdout!.on("data", (d) => (output += String(d)));
  npmStart.stderr!.on("data", (d) => (output += String(d)));
  const npmExit = new Promise<number | null>((resolve) => npmStart.once("exit", (code) => resolve(code)));
  const seen: ProcessInfo[] = [];
  const snapshot = () => {
    if (npmStart.pid === undefined) return;
    // Re-read known ones too: a process caught between fork and exec shows its parent's command line.
    for (const p of descendantsOf(npmStart.pid)) {
      const known = seen.findIndex((s) => s.pid === p.pid);
      if (known === -1) seen.push(p);
      else seen[known] = p;
    }
  };
  function cleanup() {
    for (const p of seen) if (isRunning(p.pid)) process.kill(p.pid, "SIGKILL");
    if (npmStart.pid !== undefined && isRunning(npmStart.pid)) process.kill(npmStart.pid, "SIGKILL");
    rmSync(join(ROOT, ".wrangler", `state-smoke-${process.pid}`), { recursive: true, force: true });
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      log(`${signal}: stopping npm start`);
      cleanup();
      process.exit(1);
    });
  }

  const readyBy = Date.now() + READY_TIMEOUT_MS;
  while (!output.includes("is up at") && npmStart.exitCode === null && Date.now() < readyBy) {
    snapshot();
    await new Promise((r) => setTimeout(r, 250));
  }
  if (!output.includes("is up at")) {
    fail(npmStart.exitCode !== null ? `npm start exited (${npmStart.exitCode}) before the gateway was up` : `npm start was not up within ${READY_TIMEOUT_MS / 1000} s`);
    console.log(output.split("\n").map((l) => `  | ${l}`).join("\n"));
    cleanup();
    return 1;
  }
  snapshot();
  const token = /admin token: (\S+)/.exec(output)?.[1];
  if (!token) fail("npm start did not print the admin token");
  // What `ps -eo args` shows every user of the machine: /proc/<pid>/cmdline of every process.
  const showing = listProcesses().filter((p) => p.cmdline.includes(SMOKE_ADMIN_TOKEN));
  if (showing.length > 0) fail(`the admin token is on the command line of ${describeProcesses(showing)}`);
  log(`up; admin token printed${showing.length === 0 ? ", on no command line" : ""}; processes: ${describeProcesses(seen)}`);

  // 3. Every README example.
  const hasJq = (await run("jq", ["--version"], 5_000)).code === 0;
  const scratch = join(ROOT, "node_modules", ".cache", "smoke");
  mkdirSync(scratch, { recursive: true });
  for (const [i, step] of plan.entries()) {
    const text = withPorts(step.text, gatewayPort, simBase);
    const label = `[${i + 1}/${plan.length}] ${step.expectation.name}`;
    const t0 = performance.now();
    let result: Result;
    if (step.kind === "ts") {
      const file = join(scratch, `openai-${process.pid}.mts`);
      writeFileSync(file, text);
      result = await run(process.execPath, ["--import", "tsx", file]);
      rmSync(file, { force: true });
    } else if (/\|\s*jq\b/.test(text) && !hasJq) {
      log(`${label}: jq is not installed; running it without the jq filter`);
      result = await run("bash", ["-o", "pipefail", "-c", text.replace(/\|\s*jq\b.*$/, "")]);
    } else {
      result = await run("bash", ["-o", "pipefail", "-c", text]);
    }
    try {
      step.expectation.check(result);
      log(`${label}: ok (${Math.round(performance.now() - t0)} ms)`);
    } catch (err) {
      fail(`${label}: ${(err as Error).message}\n    command: ${text.split("\n")[0]}${step.kind === "ts" ? " ..." : ""}\n    stdout: ${result.stdout.slice(0, 400).trim()}\n    stderr: ${result.stderr.slice(-400).trim()}`);
    }
    snapshot();
  }

  // 4. SIGTERM to the top process; everything must be gone within SHUTDOWN_LIMIT_MS.
  snapshot();
  const pids = new Set(seen.map((p) => p.pid));
  const ports = [...new Set([gatewayPort, inspectorPort, ...SIM_PORT_OFFSETS.map((o) => simBase + o), ...(await listeningPortsOf(pids))])].sort((a, b) => a - b);
  log(`SIGTERM to npm (pid ${npmStart.pid}); ${seen.length} processes started, listening on ${ports.join(", ")}`);
  const t0 = performance.now();
  process.kill(npmStart.pid!, "SIGTERM");
  let left = seen;
  while (performance.now() - t0 < SHUTDOWN_LIMIT_MS) {
    left = seen.filter((p) => isRunning(p.pid));
    if (left.length === 0 && npmStart.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const npmCode = await Promise.race([npmExit, new Promise<string>((r) => setTimeout(() => r("still running"), 100))]);
  const stillListening: number[] = [];
  for (const port of ports) if (await isListening(port)) stillListening.push(port);
  const stopLines = output.split("\n").filter((l) => /^start: .*(stopp|listening)/.test(l));
  for (const l of stopLines) log(`  npm start said: ${l}`);
  if (left.length > 0) fail(`still running ${SHUTDOWN_LIMIT_MS / 1000} s after SIGTERM: ${describeProcesses(left)}`);
  else log(`all ${seen.length} processes gone after ${Math.round(performance.now() - t0)} ms (npm exited: ${npmCode})`);
  if (stillListening.length > 0) fail(`still listening after shutdown: ${stillListening.join(", ")}`);
  else log(`nothing listening on ${ports.join(", ")}`);

  // 5. No uncaught exception in anything the gateway printed.
  const uncaught = output.split("\n").filter((l) => /\bUncaught\b/.test(l));
  if (uncaught.length > 0) fail(`the gateway printed ${uncaught.length} uncaught exception(s), first: ${uncaught[0]!.trim()}`);

  cleanup();
  clearTimeout(deadline);
  if (failures.length > 0) {
    log(`FAILED: ${failures.length} problem(s)`);
    if (!process.env.SMOKE_QUIET) console.log(output.split("\n").slice(-60).map((l) => `  | ${l}`).join("\n"));
    return 1;
  }
  log(`passed: ${plan.length} README examples, clean shutdown (${[...new Set(seen.map(processName))].join(", ")})`);
  return 0;
}

process.exitCode = await main();
