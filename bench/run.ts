// `npm run bench` (quick profile, a few minutes on 2 cores) or `npm run bench -- --full`.
// Starts the simulated cluster, the gateway (a frozen dry-run bundle under wrangler dev), the
// bare pass-through Worker and the Portkey gateway, measures them side by side, stops every
// process it started (also on Ctrl-C and on errors), and writes bench/results/latest.json and
// the benchmark section of docs/benchmarks.md. Only 127.0.0.1 is contacted; every load loop
// is bounded in count and time. Speed is reported against targets, never asserted.
//   --only overhead,cpu,streaming,parsers,apis,fanout,decider,clusters,scaling,memory,profiles,startup,tokenizer
//        run some phases only; the JSON goes to a temp file and the doc is left alone
//        (e.g. `npm run bench -- --only parsers,apis`, a couple of minutes).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { buildGateway, buildPassthrough, buildProductionBundle, passthroughConfig, relayFloorConfig, startupProfile } from "./build.js";
import { installSignalHandlers, runCleanups } from "./cleanup.js";
import { FULL, QUICK, type BenchContext } from "./context.js";
import { measureCpu } from "./cpu.js";
import { measureDecider } from "./decider.js";
import { measureClusters } from "./clusters.js";
import { measureFanout } from "./fanout.js";
import { measureMemory, measureStartups } from "./footprint.js";
import { destroyAgents } from "./http.js";
import { measureOverhead } from "./overhead.js";
import { takeProfiles } from "./profiles.js";
import { machineBusyCores, machineInfo } from "./proc.js";
import { versions, writeReport, type BenchResult } from "./report.js";
import { measureScaling } from "./scaling.js";
import { clusterSpec, gatewayConfig } from "./setup.js";
import { measureStreaming } from "./streaming.js";
import { measureTokenizer } from "./tokenizer.js";
import { measureApis, measureParsers } from "./token-cpu.js";
import { startGateway, startPassthrough, startPortkey, startSim } from "./targets.js";

const PHASES = ["overhead", "cpu", "streaming", "parsers", "apis", "fanout", "decider", "clusters", "scaling", "memory", "profiles", "startup", "tokenizer"] as const;
type Phase = (typeof PHASES)[number];

function parseArgs(argv: string[]): { full: boolean; only?: Set<Phase> } {
  let full = false;
  let only: Set<Phase> | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--full") full = true;
    else if (a === "--quick") full = false;
    else if (a === "--only") {
      const list = (argv[++i] ?? "").split(",").filter(Boolean);
      for (const p of list) if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${PHASES.join(", ")})`);
      only = new Set(list as Phase[]);
    } else if (a === "--help" || a === "-h") {
      console.log(`usage: npm run bench [-- --full] [--only ${PHASES.join(",")}]`);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return only ? { full, only } : { full };
}

/** Other work on the machine skews every figure: wait (bounded) for it to calm down, and
 *  record how busy the machine was before the measurements started. */
async function quietMachine(log: (m: string) => void): Promise<{ busyCoresBefore: number; waitedS: number; loadAvg1: number }> {
  const t0 = performance.now();
  let busy = await machineBusyCores(1_000);
  while (busy > 0.3 && performance.now() - t0 < 60_000) {
    log(`bench: the machine is busy with other work (${busy.toFixed(2)} cores); waiting up to 60 s for it to calm down`);
    busy = await machineBusyCores(5_000);
  }
  if (busy > 0.3) log(`bench: WARNING: ${busy.toFixed(2)} cores busy with other work; figures will be noisy`);
  return { busyCoresBefore: busy, waitedS: (performance.now() - t0) / 1000, loadAvg1: loadavg()[0] ?? 0 };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const counts = args.full ? FULL : QUICK;
  const wants = (p: Phase) => !args.only || args.only.has(p);
  const t0 = performance.now();
  const log = (msg: string) => {
    const s = Math.round((performance.now() - t0) / 1000);
    console.log(`[${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}] ${msg}`);
  };
  installSignalHandlers();
  const tmp = await mkdtemp(join(tmpdir(), "vllm-edge-bench-"));
  const result: BenchResult = {
    schema: 1,
    profile: args.full ? "full" : "quick",
    command: `npm run bench${args.full ? " -- --full" : ""}${args.only ? ` --only ${[...args.only].join(",")}` : ""}`,
    date: new Date().toISOString(),
    durationS: 0,
    machine: machineInfo(),
    versions: await versions(),
    counts,
    errors: [],
  };
  log(`bench: ${result.profile} profile on ${result.machine.nproc} cores (${result.machine.cpuModel}); node ${result.versions.node}, wrangler ${result.versions.wrangler}, workerd ${result.versions.workerd}`);
  const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
    log(`${name}: start`);
    try {
      return await fn();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log(`${name}: FAILED: ${message.split("\n")[0]}`);
      result.errors.push({ phase: name, message: message.slice(0, 2000) });
      return undefined;
    }
  };
  try {
    log("build: wrangler deploy --dry-run (gateway, its [env.production] bundle, and the pass-through)");
    const bundle = await buildGateway(tmp);
    const passthroughBundle = await buildPassthrough(tmp);
    const productionBundle = await buildProductionBundle(tmp);
    result.footprint = {
      bundle: { ...bundle, dir: undefined },
      passthroughBundle: { ...passthroughBundle, dir: undefined },
      productionBundle: { ...productionBundle, dir: undefined },
    };
    log(`build: gateway ${(bundle.rawBytes / 1024).toFixed(0)} KiB, gzip ${(bundle.gzipBytes / 1024).toFixed(0)} KiB; [env.production] gzip ${(productionBundle.gzipBytes / 1024).toFixed(0)} KiB`);

    const sim = await startSim(clusterSpec(), tmp);
    log("targets: sim cluster up; starting the gateway, the pass-through Worker and Portkey");
    const config = gatewayConfig(sim);
    const gateway = await startGateway(bundle.dir, config);
    const ptConfig = await passthroughConfig(tmp);
    const passthrough = await startPassthrough(ptConfig, sim.url("agg0"));
    const portkey = await startPortkey(`${sim.url("agg0")}/v1`);
    log(`targets: gateway ready in ${gateway.dev.readyMs.toFixed(0)} ms, pass-through ${passthrough.dev.readyMs.toFixed(0)} ms, portkey ${portkey.readyMs.toFixed(0)} ms`);
    const ctx: BenchContext = {
      counts,
      sim,
      direct: (engine) => ({ name: "direct", base: sim.url(engine) }),
      gateway,
      passthrough,
      portkey,
      passthroughConfig: ptConfig,
      relayFloorConfig: await relayFloorConfig(tmp),
      log,
    };

    result.background = await quietMachine(log);
    // Profiles first: after a few minutes of load wrangler's inspector proxy stops answering
    // /json/list (it works again on a fresh wrangler dev).
    if (wants("profiles")) result.profiles = await phase("profiles", () => takeProfiles(ctx, bundle.bundlePath));
    if (wants("overhead")) result.overhead = await phase("overhead", () => measureOverhead(ctx));
    if (wants("cpu")) result.cpu = await phase("cpu", () => measureCpu(ctx));
    if (wants("streaming")) result.streaming = await phase("streaming", () => measureStreaming(ctx));
    if (wants("parsers")) result.parsers = await phase("parsers", () => measureParsers(ctx));
    if (wants("apis")) result.apis = await phase("apis", () => measureApis(ctx));
    if (wants("fanout")) result.fanout = await phase("fanout", () => measureFanout(ctx));
    // Its own section of docs/benchmarks.md and bench/results/decider.json (written by the phase).
    if (wants("decider")) Object.assign(result, { decider: await phase("decider", () => measureDecider(ctx, bundle.dir)) });
    // Its own section of docs/benchmarks.md and bench/results/clusters.json (written by the phase).
    if (wants("clusters")) Object.assign(result, { clusters: await phase("clusters", () => measureClusters(ctx, bundle.dir)) });
    if (wants("scaling")) result.scaling = await phase("scaling", () => measureScaling(ctx));
    if (wants("tokenizer")) result.tokenizer = await phase("tokenizer", () => measureTokenizer(ctx));
    if (wants("memory")) result.footprint.memory = await phase("memory", () => measureMemory(ctx));
    if (wants("startup")) {
      result.footprint.startup = await phase("startup", () => measureStartups(ctx, bundle.dir, config, { gateway: gateway.dev.readyMs, passthrough: passthrough.dev.readyMs }));
      result.footprint.isolateStartup = await phase("isolate start-up", async () => {
        log("isolate start-up: wrangler check startup");
        return startupProfile(tmp);
      });
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log(`bench: FAILED: ${message.split("\n")[0]}`);
    result.errors.push({ phase: "setup", message: message.slice(0, 2000) });
  } finally {
    log("bench: stopping every process it started");
    destroyAgents();
    await runCleanups();
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
  result.durationS = (performance.now() - t0) / 1000;
  if (args.only) {
    const file = join(tmpdir(), `vllm-edge-bench-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(result, null, 2));
    log(`bench: partial run (--only): results in ${file}; docs/benchmarks.md left alone`);
  } else {
    const files = await writeReport(result);
    log(`bench: wrote ${files.join(" and ")}`);
  }
  log(`bench: done in ${result.durationS.toFixed(0)} s${result.errors.length ? ` with ${result.errors.length} failed phase(s)` : ""}`);
  process.exit(result.errors.length ? 1 : 0);
}

main().catch(async (err: unknown) => {
  console.error(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  await runCleanups();
  process.exit(1);
});
