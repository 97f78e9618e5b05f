// `npm test`: `vitest run` (arguments passed on), with its output shown as it comes and also
// scanned for uncaught-exception traces (workerd prints `uncaught exception; source =
// Uncaught (in promise); ...` when a promise in the Worker rejects with nobody listening, e.g.
// a client that went away). A run whose tests pass but that printed such a trace fails: it is
// a bug in the Worker that the assertions did not see. Then, when no arguments were given,
// `npm run smoke` (scripts/smoke.ts), whatever vitest said. Exit code: vitest's, else 1 for
// traces, else the smoke's.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { requireNode22 } from "./node-version.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const ANSI = /\x1b\[[0-9;]*m/g;
/** One per trace: workerd's "uncaught exception; source = Uncaught ..." line, Node's "Uncaught Error". */
const TRACE = /\bUncaught\b/;
/** workerd logs every outbound connection it could not make or keep (refused, reset before
 *  an answer) as an uncaught "Network connection lost", even when the Worker awaited and
 *  caught that fetch's rejection (workerd issue 4253; test/integration/workerd-refused-log.test.ts
 *  reproduces it with a bare try/catch around fetch). Tests that point an engine at a closed
 *  port or drop its connection print it by design; it is counted and shown, not failed on. */
const WORKERD_CONNECTION_LOG = /uncaught exception; source = Uncaught \(in promise\); stack = Error: Network connection lost\.$/;
const TEST_FILE = /\b(test\/[\w./-]+\.test\.ts)\b/;

interface Trace {
  line: string;
  /** The test file named last before the trace: workerd prints asynchronously, so this is the
   *  nearest file in the output, not proof of which test caused it. */
  nearFile: string | undefined;
}

function run(args: string[], onLine: (line: string) => void): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      stdio: ["inherit", "pipe", "pipe"],
      env: { ...process.env, ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}) },
    });
    for (const [stream, out] of [[child.stdout!, process.stdout], [child.stderr!, process.stderr]] as const) {
      let partial = "";
      stream.on("data", (chunk: Buffer) => {
        out.write(chunk);
        const lines = (partial + chunk.toString("utf8")).split("\n");
        partial = lines.pop()!;
        for (const l of lines) onLine(l.replace(ANSI, ""));
      });
      stream.on("end", () => partial && onLine(partial.replace(ANSI, "")));
    }
    // Ctrl-C reaches vitest directly (same process group); SIGTERM is passed on.
    process.on("SIGTERM", () => child.kill("SIGTERM"));
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  requireNode22("test");
  const args = process.argv.slice(2);
  const traces: Trace[] = [];
  let connectionLogs = 0;
  let lastFile: string | undefined;
  const vitestCode = await run([join(ROOT, "node_modules/vitest/vitest.mjs"), "run", ...args], (line) => {
    const file = TEST_FILE.exec(line)?.[1];
    if (file) lastFile = file;
    if (WORKERD_CONNECTION_LOG.test(line.trim())) connectionLogs++;
    else if (TRACE.test(line)) traces.push({ line: line.trim(), nearFile: lastFile });
  });
  let code = vitestCode;
  if (traces.length > 0) {
    const byFile = new Map<string, number>();
    for (const t of traces) byFile.set(t.nearFile ?? "(before any test file)", (byFile.get(t.nearFile ?? "(before any test file)") ?? 0) + 1);
    const kinds = [...new Set(traces.map((t) => t.line.replace(/^.*?(Uncaught)/, "$1").slice(0, 120)))];
    console.error(`\ntest: FAILED: the output has ${traces.length} uncaught-exception trace${traces.length === 1 ? "" : "s"}:`);
    for (const k of kinds) console.error(`  ${k}`);
    console.error("  printed after (workerd logs asynchronously, so the test is nearby, not certain):");
    for (const [file, n] of byFile) console.error(`    ${String(n).padStart(4)}  ${file}`);
    code ||= 1;
  } else console.log("test: no uncaught-exception traces in the output");
  if (connectionLogs > 0) console.log(`test: ${connectionLogs} workerd log(s) of an engine connection that failed and was handled (workerd issue 4253; not a failure)`);

  if (args.length > 0) {
    console.log("test: arguments given, so npm run smoke is skipped");
    return code;
  }
  // Also after a failure, so one CI run reports both.
  console.log("\ntest: npm run smoke ...");
  const smokeCode = await run(["--import", "tsx", join(ROOT, "scripts/smoke.ts")], () => {});
  return code || smokeCode;
}

process.exitCode = await main();
