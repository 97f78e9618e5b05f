// `npm start`: the simulated vLLM cluster (sim/default-cluster.json) plus `wrangler dev`
// pointed at it. Waits until both answer, prints copy-paste examples and the local admin
// token, and stops everything it started (wrangler, its workerd and esbuild processes, the
// sim engines) on SIGINT, SIGTERM or SIGHUP, or when the npm process that launched it exits.
// No account and no network needed. `npm start -- --help` lists every port it uses;
// `npm start -- --instance 2` runs a second gateway and cluster next to the first.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { startCluster } from "../sim/cluster.js";
import { startControlServer } from "../sim/control.js";
import type { ClusterSpec, RunningCluster } from "../sim/types.js";
import { DEFAULT_SIM_BASE_PORT, INSTANCE, START_PORTS, clusterPorts, describePorts, localPorts, moveClusterPorts, moveConfigEngineUrls, sortedClusterPorts, type LocalPorts } from "./local-ports.js";
import { writeDevSecrets, type DevSecretsFile } from "./dev-secrets.js";
import { probeHealth } from "./gateway-health.js";
import { readWranglerVar } from "./wrangler-config.js";
import { requireNode22 } from "./node-version.js";
import { describeProcesses, groupMembers, processName, stopProcessGroup, watchLaunchers } from "./processes.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOST = "127.0.0.1";
const READY_TIMEOUT_MS = 90_000;

const DEFAULT_CLUSTER = join(ROOT, "sim/default-cluster.json");

function help(ports: LocalPorts): string {
  const cluster = JSON.parse(readFileSync(DEFAULT_CLUSTER, "utf8")) as ClusterSpec;
  return `usage: npm start [-- OPTIONS]

  --instance N          run instance N (1-${INSTANCE.max}) next to the others: every default port moves,
                        the gateway and inspector by N-1, the sim engines by 1000 x (N-1);
                        env ${INSTANCE.env} (default 1). The port options below override it.
  --port N              ${START_PORTS.gateway.what}; env ${START_PORTS.gateway.env} (default 8787)
  --inspector-port N    ${START_PORTS.inspector.what}; env ${START_PORTS.inspector.env} (default 9229)
  --sim-base-port N     ${START_PORTS.simBase.what};
                        env ${START_PORTS.simBase.env} (default ${DEFAULT_SIM_BASE_PORT})
  --sim-control-port N  ${START_PORTS.simControl.what}; env ${START_PORTS.simControl.env}
  --persist-to DIR      local Durable Object state; env GATEWAY_STATE_DIR
                        (default .wrangler/state-<gateway port>, one per gateway)

Ports of this run (instance ${ports.instance}${ports.instance === 1 ? ", the defaults" : ""}; wrangler also listens on a few random
loopback ports of its own):
${describePorts(ports, cluster)}

The admin API token is ADMIN_TOKEN from the environment, else from .dev.vars, else a random
one for this run; it is printed once the gateway is up. It reaches wrangler in a private
temporary file (--env-file), not on its command line.`;
}

interface StartOptions {
  ports: LocalPorts;
  gatewayPort: number;
  inspectorPort: number;
  simBasePort: number;
  simControlPort: number | undefined;
  persistTo: string;
}

function parseOptions(argv: string[]): StartOptions {
  const known = new Set([...Object.values(START_PORTS).map((s) => s.flag), INSTANCE.flag, "--persist-to"]);
  let persistTo = process.env.GATEWAY_STATE_DIR || undefined;
  const ports = localPorts(argv);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--help" || a === "-h") {
      console.log(help(ports));
      process.exit(0);
    }
    const flag = a.split("=")[0]!;
    if (!known.has(flag)) throw new Error(`unknown option ${a}\n\n${help(ports)}`);
    if (flag === "--persist-to") {
      persistTo = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[i + 1];
      if (!persistTo) throw new Error("--persist-to: expected a directory");
    }
    if (!a.includes("=")) i++;
  }
  return {
    ports,
    gatewayPort: ports.gateway,
    inspectorPort: ports.inspector,
    simBasePort: ports.simBase,
    simControlPort: ports.simControl,
    persistTo: persistTo ?? join(ROOT, ".wrangler", `state-${ports.gateway}`),
  };
}

/** ADMIN_TOKEN for this run and where it came from. Written only to the private file for
 *  wrangler (dev-secrets.ts), removed when this script stops. */
function adminToken(): { token: string; source: string } {
  if (process.env.ADMIN_TOKEN) return { token: process.env.ADMIN_TOKEN, source: "ADMIN_TOKEN from the environment" };
  const devVars = join(ROOT, ".dev.vars");
  if (existsSync(devVars)) {
    const line = /^\s*ADMIN_TOKEN\s*=\s*(.*)$/m.exec(readFileSync(devVars, "utf8"));
    const value = line?.[1]?.trim().replace(/^(["'])(.*)\1$/, "$2");
    if (value) return { token: value, source: "ADMIN_TOKEN from .dev.vars" };
  }
  return { token: `local-${randomBytes(12).toString("hex")}`, source: "random for this run; set ADMIN_TOKEN or put it in .dev.vars to choose one" };
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, HOST, () => s.close(() => resolve(true)));
  });
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: HOST });
    socket.setTimeout(1_000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** wrangler.toml's GATEWAY_CONFIG with the default cluster's engine URLs moved to where the
 *  sim listens now. Only needed when the sim is not on its default ports. */
async function movedGatewayConfig(from: ClusterSpec, to: ClusterSpec): Promise<string> {
  const text = await readWranglerVar(join(ROOT, "wrangler.toml"), "GATEWAY_CONFIG");
  if (typeof text !== "string") throw new Error("wrangler.toml has no GATEWAY_CONFIG var to point at the moved sim engines");
  const moved = new Map<number, number>();
  const before = clusterPorts(from);
  const after = clusterPorts(to);
  before.forEach((p, i) => moved.set(p, after[i]!));
  return moveConfigEngineUrls(text, moved);
}

function examples(gateway: string, prefillStats: string, token: string): string {
  // A Connect streaming request body is one enveloped message: flags byte + 4-byte length.
  const demo = '{"request_id":"demo-1","text":"hello edge","stream":true}';
  const envelope = ["00", ...[24, 16, 8, 0].map((b) => ((demo.length >> b) & 0xff).toString(16).padStart(2, "0"))].map((h) => `\\x${h}`).join("");
  return `
  # PD generate over Connect (JSON), streamed; n=1 runs the prefill leg:
  curl -sN ${gateway}/vllm.grpc.engine.VllmEngine/Generate \\
    -H 'content-type: application/connect+json' -H 'x-model: sim-model' -D - \\
    --data-binary @<(printf '${envelope}${demo}')

  # A fan-out (n=4) request skips the prefill leg (see x-pd-prefill), with buf curl over gRPC-web:
  npx buf curl --protocol grpcweb --schema proto -H 'x-model: sim-model' \\
    -d '{"text":"hello edge","stream":true,"sampling_params":{"n":4,"max_tokens":8}}' \\
    ${gateway}/vllm.grpc.engine.VllmEngine/Generate -v

  # OpenAI-compatible HTTP (model sim-model-http):
  curl -s ${gateway}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"sim-model-http","messages":[{"role":"user","content":"hello edge"}],"n":3}'

  # OpenAI over VllmEngine engines (model Qwen/Qwen3-0.6B): the gateway tokenizes with the
  # engine's real Qwen3 tokenizer bundle; <sim-say>…</sim-say> scripts the sim's reply:
  curl -sN ${gateway}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"Qwen/Qwen3-0.6B","messages":[{"role":"user","content":"<sim-say>Hello from the edge! 你好 😀</sim-say>"}],"max_tokens":12,"stream":true}'

  # What each engine did:
  curl -s ${prefillStats}

  # The admin API (engines with their health and breaker state):
  curl -s ${gateway}/admin/engines -H 'authorization: Bearer ${token}'
`;
}

interface RunPort {
  port: number;
  what: string;
}

/** Every fixed port a run listens on: gateway, inspector, each sim engine's, the control server. */
function runPorts(ports: LocalPorts, defaultSpec: ClusterSpec): RunPort[] {
  const engines = moveClusterPorts(defaultSpec, ports.simBase).engines.flatMap((e) =>
    [
      { port: e.port, what: `sim engine ${e.name}` },
      { port: e.grpcPort, what: `sim engine ${e.name} (gRPC)` },
      { port: e.bootstrapPort, what: `sim engine ${e.name} (bootstrap)` },
    ].filter((p): p is RunPort => p.port !== undefined && p.port !== 0),
  );
  const control = ports.simControl === undefined ? [] : [{ port: ports.simControl, what: "the sim control server" }];
  return [{ port: ports.gateway, what: "the gateway" }, { port: ports.inspector, what: "the inspector" }, ...engines, ...control];
}

async function busyPorts(ports: RunPort[]): Promise<RunPort[]> {
  const busy: RunPort[] = [];
  for (const p of ports) if (!(await portIsFree(p.port))) busy.push(p);
  return busy;
}

/** What to run instead when ports are taken: the next instance whose ports are all free. */
async function busyMessage(busy: RunPort[], from: number, defaultSpec: ClusterSpec): Promise<string> {
  const taken = busy.slice(0, 3).map((p) => `${p.port} (${p.what})`).join(", ") + (busy.length > 3 ? ` and ${busy.length - 3} more` : "");
  const lines = [`ports already in use (another npm start?): ${taken}`];
  for (let n = from + 1; n <= Math.min(INSTANCE.max, from + 10); n++) {
    const ports = localPorts([INSTANCE.flag, String(n)], {});
    if ((await busyPorts(runPorts(ports, defaultSpec))).length > 0) continue;
    const sim = clusterPorts(moveClusterPorts(defaultSpec, ports.simBase));
    lines.push(`a gateway next to it: npm start -- ${INSTANCE.flag} ${n}   (gateway ${ports.gateway}, inspector ${ports.inspector}, sim engines ${Math.min(...sim)}-${Math.max(...sim)})`);
    break;
  }
  lines.push(`or choose ports with ${START_PORTS.gateway.flag}, ${START_PORTS.inspector.flag}, ${START_PORTS.simBase.flag} (npm start -- --help lists every port)`);
  return lines.join("\n       ");
}

async function main() {
  requireNode22("start");
  const options = parseOptions(process.argv.slice(2));
  const gateway = `http://${HOST}:${options.gatewayPort}`;
  const defaultSpec = JSON.parse(await readFile(DEFAULT_CLUSTER, "utf8")) as ClusterSpec;
  const busy = await busyPorts(runPorts(options.ports, defaultSpec));
  if (busy.length > 0) throw new Error(await busyMessage(busy, options.ports.instance, defaultSpec));

  const spec = moveClusterPorts(defaultSpec, options.simBasePort);
  const { token, source } = adminToken();
  const vars: string[] = [];
  if (options.simBasePort !== DEFAULT_SIM_BASE_PORT) vars.push("--var", `GATEWAY_CONFIG:${await movedGatewayConfig(defaultSpec, spec)}`);

  // Everything below is undone by stop(), whatever has been started when it runs.
  let secrets: DevSecretsFile | undefined;
  let cluster: RunningCluster | undefined;
  let control: { url: string; close(): Promise<void> } | undefined;
  let wrangler: ChildProcess | undefined = undefined;
  let stopping = false;
  const stop = async (reason: string, code: number) => {
    if (stopping) return;
    stopping = true;
    console.log(`\nstart: ${reason}; stopping ...`);
    const stopped: string[] = [];
    if (wrangler?.pid !== undefined) {
      const members = await stopProcessGroup(wrangler.pid, 2_500);
      const left = groupMembers(wrangler.pid);
      stopped.push(`wrangler dev: ${members.length > 0 ? describeProcesses(members) : "already exited"}`);
      if (left.length > 0) console.error(`start: still running after SIGKILL: ${describeProcesses(left)}`);
    }
    if (cluster) {
      await cluster.close();
      stopped.push(`sim engines on ports ${sortedClusterPorts(spec).join(", ")}`);
    }
    if (control) {
      await control.close();
      stopped.push(`sim control server ${control.url}`);
    }
    if (secrets) {
      secrets.remove();
      stopped.push("removed the admin token file");
    }
    console.log(stopped.length > 0 ? `start: stopped ${stopped.join("; ")}` : "start: nothing was running yet");
    const ports = [options.gatewayPort, options.inspectorPort, ...sortedClusterPorts(spec), ...(options.simControlPort ? [options.simControlPort] : [])];
    const busy: number[] = [];
    for (const port of ports) if (await isListening(port)) busy.push(port);
    if (busy.length > 0) {
      console.error(`start: still listening: ${busy.join(", ")}`);
      code = code || 1;
    } else console.log(`start: nothing left listening on ${ports.join(", ")}`);
    process.exit(code);
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void stop(signal, 0));
  // npm does not always pass a signal on (and a killed npm cannot): when the npm, sh or tsx
  // process that launched this script is gone, stop rather than serve as an orphan.
  watchLaunchers((launcher) => void stop(`${processName(launcher)} (pid ${launcher.pid}) exited`, 0));

  try {
    console.log("start: simulated vLLM cluster ...");
    cluster = await startCluster(spec);
    for (const e of cluster.engines) {
      console.log(`  engine ${e.spec.name.padEnd(16)} ${e.spec.role.padEnd(8)} ${e.spec.kvConnector.padEnd(17)} ${e.url}${e.grpcUrl ? `  (gRPC ${e.grpcUrl})` : ""}`);
    }
    if (options.simControlPort !== undefined) {
      control = await startControlServer(options.simControlPort);
      console.log(`  control ${control.url}`);
    }
  } catch (err) {
    console.error(`start: ${(err as Error).message} (choose other sim ports with --sim-base-port or SIM_BASE_PORT)`);
    return stop("the sim did not start", 1);
  }

  const stateDir = relative(ROOT, options.persistTo).startsWith("..") ? options.persistTo : relative(ROOT, options.persistTo);
  console.log(`start: wrangler dev on ${gateway} (inspector ${options.inspectorPort}, state in ${stateDir}) ...`);
  try {
    secrets = writeDevSecrets(ROOT, { ADMIN_TOKEN: token });
  } catch (err) {
    console.error(`start: ${(err as Error).message} (${source})`);
    return stop("the admin token cannot be handed to wrangler", 1);
  }
  // Only wrangler's own settings, not the token (it is in the file): no telemetry, no
  // offline stack trace from fetching the Request.cf placeholder, and env files read.
  const wranglerEnv: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true" };
  delete wranglerEnv.ADMIN_TOKEN;
  wrangler = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "dev",
      "--ip", HOST, "--port", String(options.gatewayPort), "--inspector-port", String(options.inspectorPort),
      "--persist-to", options.persistTo,
      "--show-interactive-dev-session=false",
      // The cron (wrangler.toml [triggers]) only restarts the registry's health-check alarm
      // after a deploy; locally the first routed request starts the alarm. --test-scheduled
      // replaces wrangler's "Scheduled Workers are not automatically triggered" warning with
      // a /__scheduled route that runs the cron by hand.
      "--test-scheduled",
      ...secrets.args,
      ...vars,
    ],
    {
      cwd: ROOT,
      // Its own process group: stop() ends wrangler, its second node process, both workerd
      // processes and esbuild with one kill(-pgid), and a terminal's Ctrl-C reaches only this
      // script, which then stops the group in order.
      detached: true,
      stdio: ["ignore", "inherit", "inherit"],
      env: wranglerEnv,
    },
  );
  wrangler.once("exit", (code, signal) => void stop(`wrangler dev exited (${signal ?? `code ${code}`})`, 1));
  console.log(`start: wrangler dev is process group ${wrangler.pid} (wrangler, workerd, esbuild)`);

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (stopping) return;
    const health = await probeHealth(`${gateway}/health`);
    if (health?.up) break;
    if (health && !health.up) {
      console.error(`\nstart: the gateway answers /health with 503: GATEWAY_CONFIG is invalid:`);
      for (const e of health.configErrors) console.error(`  - ${e}`);
      console.error("start: fix the config (npm run check-config lists the same errors) and run npm start again.");
      return stop("the gateway config is invalid", 1);
    }
    if (Date.now() > deadline) return stop(`the gateway did not answer ${gateway}/health within ${READY_TIMEOUT_MS / 1000} s`, 1);
    await new Promise((r) => setTimeout(r, 250));
  }

  const simPorts = clusterPorts(spec);
  console.log(`
vllm-edge-gateway${options.ports.instance > 1 ? ` instance ${options.ports.instance}` : ""} is up at ${gateway} in front of the simulated cluster.

  gateway ${gateway}   inspector ${options.inspectorPort}   sim engines ${Math.min(...simPorts)}-${Math.max(...simPorts)}${control ? `   sim control ${control.url}` : ""}
  admin token: ${token}   (${source})
  local Durable Object state: ${stateDir}
${examples(gateway, `${cluster.engine("prefill-0").url}/sim/stats`, token)}
Ctrl-C, or SIGINT/SIGTERM to npm or to this process (pid ${process.pid}), stops everything.
`);
}

main().catch((err) => {
  console.error(`start: ${(err as Error).message}`);
  process.exit(1);
});
