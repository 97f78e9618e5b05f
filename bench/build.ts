// The gateway bundle: `wrangler deploy --dry-run` (no account needed) builds it once; its
// size is reported, and the benchmarks run that frozen bundle under `wrangler dev` (so an edit
// to src/ during a run cannot reload the Worker under the load). `wrangler check startup`
// profiles the isolate's own start-up (evaluating the bundle's top level).
import { execFile } from "node:child_process";
import { copyFile, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { summarizeProfile, type CpuProfile, type ProfileSummary, bundleModuleMap } from "./profile.js";

const run = promisify(execFile);
const WRANGLER = "node_modules/wrangler/bin/wrangler.js";
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };

export interface BundleInfo {
  dir: string;
  bundlePath: string;
  rawBytes: number;
  gzipBytes: number;
  /** What wrangler itself printed ("Total Upload: X KiB / gzip: Y KiB"). */
  wranglerTotalKiB?: number;
  wranglerGzipKiB?: number;
  buildMs: number;
}

async function dryRun(args: string[], cwd = process.cwd()): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, [WRANGLER, "deploy", "--dry-run", ...args], { cwd, env: ENV, timeout: 180_000, maxBuffer: 16 << 20 });
  return stdout + stderr;
}

function reported(out: string): { wranglerTotalKiB?: number; wranglerGzipKiB?: number } {
  const m = /Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/.exec(out);
  return m ? { wranglerTotalKiB: Number(m[1]), wranglerGzipKiB: Number(m[2]) } : {};
}

async function sizes(path: string): Promise<{ rawBytes: number; gzipBytes: number }> {
  const bytes = await readFile(path);
  return { rawBytes: (await stat(path)).size, gzipBytes: gzipSync(bytes, { level: 9 }).byteLength };
}

/** Builds the gateway into `<tmp>/gateway` and writes a wrangler.toml there that serves the
 *  built bundle as is (`no_bundle`), with the project's bindings, flags and migrations. */
export async function buildGateway(tmp: string): Promise<BundleInfo> {
  const dir = join(tmp, "gateway");
  const t0 = performance.now();
  const out = await dryRun(["--outdir", dir]);
  const buildMs = performance.now() - t0;
  const toml = await readFile("wrangler.toml", "utf8");
  if (!/^main\s*=.*$/m.test(toml)) throw new Error("wrangler.toml: no main = line");
  await writeFile(join(dir, "wrangler.toml"), toml.replace(/^main\s*=.*$/m, 'main = "index.js"\nno_bundle = true'));
  const bundlePath = join(dir, "index.js");
  return { dir, bundlePath, ...(await sizes(bundlePath)), ...reported(out), buildMs };
}

/** The deployed bundle (`[env.production]`, minified): the size issue 17's target is read
 *  against. The benchmarks run the top level's unminified build (buildGateway). */
export async function buildProductionBundle(tmp: string): Promise<BundleInfo> {
  const dir = join(tmp, "gateway-production");
  const t0 = performance.now();
  const out = await dryRun(["--env", "production", "--outdir", dir]);
  const buildMs = performance.now() - t0;
  const bundlePath = join(dir, "index.js");
  return { dir, bundlePath, ...(await sizes(bundlePath)), ...reported(out), buildMs };
}

/** A copy of bench/passthrough-worker in `tmp` (so wrangler's .wrangler/ state lands there,
 *  not in the work tree); returns its wrangler.toml. */
export async function passthroughConfig(tmp: string): Promise<string> {
  return workerCopy(tmp, "passthrough");
}

/** The same for bench/relay-floor-worker (the per-chunk floor of relays that run JS). */
export async function relayFloorConfig(tmp: string): Promise<string> {
  return workerCopy(tmp, "relay-floor");
}

async function workerCopy(tmp: string, name: string): Promise<string> {
  const dir = join(tmp, `${name}-src`);
  await mkdir(dir, { recursive: true });
  for (const f of ["index.ts", "wrangler.toml"]) await copyFile(join(`bench/${name}-worker`, f), join(dir, f));
  return join(dir, "wrangler.toml");
}

/** The pass-through Worker's bundle, for scale. */
export async function buildPassthrough(tmp: string): Promise<BundleInfo> {
  const dir = join(tmp, "passthrough");
  const config = await passthroughConfig(tmp);
  const t0 = performance.now();
  const out = await dryRun(["--config", config, "--outdir", dir]);
  const buildMs = performance.now() - t0;
  const bundlePath = join(dir, "index.js");
  return { dir, bundlePath, ...(await sizes(bundlePath)), ...reported(out), buildMs };
}

export interface StartupProfile {
  /** CPU time of the sampled start-up phase (non-idle samples), ms. */
  cpuMs: number;
  summary: ProfileSummary;
}

/** `wrangler check startup` on a dry-run bundle: a CPU profile of the Worker's start-up phase. */
export async function startupProfile(tmp: string): Promise<StartupProfile> {
  const bundle = join(tmp, "worker.bundle");
  await dryRun(["--outfile", bundle]);
  const outfile = join(tmp, "worker-startup.cpuprofile");
  await run(process.execPath, [WRANGLER, "check", "startup", "--worker", bundle, "--outfile", outfile], { env: ENV, timeout: 180_000, maxBuffer: 16 << 20 });
  const profile = JSON.parse(await readFile(outfile, "utf8")) as CpuProfile;
  const summary = summarizeProfile(profile, await bundleModuleMap(join(tmp, "gateway", "index.js")));
  return { cpuMs: summary.busyMs, summary };
}
