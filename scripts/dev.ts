// `npm run dev [-- WRANGLER DEV OPTIONS]`: `wrangler dev` for the gateway without the sim, with
// the local defaults `npm start` uses: Durable Object state per port (.wrangler/state-<port>,
// unless --persist-to is given), no telemetry, no Request.cf download. wrangler runs in its own
// process group, stopped as a whole on SIGINT/SIGTERM/SIGHUP or when npm exits.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeProcesses, processName, stopProcessGroup, watchLaunchers } from "./processes.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

function optionValue(args: string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === flag) return args[i + 1];
    if (args[i]!.startsWith(`${flag}=`)) return args[i]!.slice(flag.length + 1);
  }
  return undefined;
}

const args = process.argv.slice(2);
const port = optionValue(args, "--port") ?? process.env.GATEWAY_PORT ?? "8787";
if (optionValue(args, "--port") === undefined) args.push("--port", port);
if (optionValue(args, "--persist-to") === undefined) args.push("--persist-to", join(ROOT, ".wrangler", `state-${port}`));
console.log(`dev: wrangler dev on port ${port}, state in ${optionValue(args, "--persist-to")}`);

const wrangler = spawn(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "dev", ...args], {
  cwd: ROOT,
  detached: true,
  stdio: ["ignore", "inherit", "inherit"],
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
});
let stopping = false;
const stop = async (reason: string, code: number) => {
  if (stopping) return;
  stopping = true;
  console.log(`\ndev: ${reason}; stopping ...`);
  const stopped = await stopProcessGroup(wrangler.pid!, 2_500);
  console.log(`dev: stopped ${stopped.length > 0 ? describeProcesses(stopped) : "nothing (wrangler had exited)"}`);
  process.exit(code);
};
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void stop(signal, 0));
watchLaunchers((launcher) => void stop(`${processName(launcher)} (pid ${launcher.pid}) exited`, 0));
wrangler.once("exit", (code, signal) => void stop(`wrangler dev exited (${signal ?? `code ${code}`})`, code ?? 1));
