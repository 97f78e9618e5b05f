// `npm run deploy:check`: proves the Worker bundles and deploys, offline. For each environment of
// wrangler.toml (the top level and every [env.*] unless --env says otherwise) it runs
// `wrangler deploy --dry-run --outdir <tmp>` (no account, no network: WRANGLER_SEND_METRICS=false),
// then checks
//   - wrangler exited 0 and printed no configuration warning (an unknown key, a var missing from
//     an environment, ...);
//   - the bundle is within the Workers size limits: 64 MiB uncompressed on every plan, and
//     10 MiB gzip (paid plan; no plan deploys more). Above the free plan's 3 MiB gzip it warns;
//   - the bindings the code needs are there: METRICS (Analytics Engine dataset) and REGISTRY
//     (Durable Object EngineRegistry, created by a migration as a SQLite class);
//   - GATEWAY_CONFIG (JSON text or a TOML table) passes the gateway's own parser, as
//     `npm run check-config` does: a typo fails here, not as 503 config_invalid after a deploy;
//   - an environment named "production" does not serve the dev metrics view and does not leave
//     the data plane open;
//   - every engine "binding" of GATEWAY_CONFIG is declared in that environment (vpc_services,
//     vpc_networks or services), else /health would answer 503 after the deploy.
// Placeholders (a value written "<...>", like the template's VPC service_id) are warnings; with
// --ready (what `npm run deploy` runs before a real deploy) they are errors.
// It prints the sizes per environment and exits 1 on any error.
//
//   npm run deploy:check                      # every environment
//   npm run deploy:check -- --env production  # one environment ("" = the top level)
//   npm run deploy:check -- --ready           # placeholders are errors too
//   npm run deploy:check -- --config other.toml
// `--strict` is accepted and changes nothing: the binding check it used to turn on is always an error.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { experimental_readRawConfig, unstable_readConfig } from "wrangler";
import { checkGatewayConfig } from "./check-config.js";
import { environmentLabel } from "./wrangler-config.js";

export const MiB = 1024 * 1024;
/** Workers script size limits (pd-reference 12.5; Cloudflare's Workers limits page). */
export const LIMITS = {
  uncompressed: 64 * MiB,
  gzipFree: 3 * MiB,
  gzipPaid: 10 * MiB,
} as const;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const WRANGLER_BIN = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

export interface EnvCheck {
  /** "" = the top-level environment. */
  env: string;
  workerName: string;
  /** Bytes of the modules wrangler would upload (source maps and the outdir README excluded). */
  rawBytes: number;
  /** The same modules gzipped (zlib level 9, file by file, summed). */
  gzipBytes: number;
  /** wrangler's own "Total Upload: x KiB / gzip: y KiB" line, in bytes, when it printed one. */
  wranglerReported?: { rawBytes: number; gzipBytes: number };
  errors: string[];
  warnings: string[];
  /** wrangler's output, for when something failed. */
  output: string;
}

interface RunResult {
  code: number | null;
  output: string;
}

function runWrangler(args: string[]): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [WRANGLER_BIN, ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        WRANGLER_SEND_METRICS: "false",
        FORCE_COLOR: "0",
        NO_COLOR: "1",
        CI: "true",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, output }));
  });
}

function kib(text: string): number {
  return Math.round(Number.parseFloat(text) * 1024);
}

/** Parses wrangler's "Total Upload: 1339.82 KiB / gzip: 244.40 KiB". */
export function parseTotalUpload(output: string): { rawBytes: number; gzipBytes: number } | undefined {
  const m = /Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/.exec(output);
  if (!m?.[1] || !m[2]) return undefined;
  return { rawBytes: kib(m[1]), gzipBytes: kib(m[2]) };
}

/** Configuration warnings wrangler printed (unknown keys, vars not repeated in an environment, ...). */
export function configWarnings(output: string): string[] {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
  const found: string[] = [];
  const re = /\[WARNING\][^\n]*Processing [^\n]*configuration:\s*\n([\s\S]*?)(?:\n\s*\n(?=\S)|$)/g;
  for (let m = re.exec(plain); m; m = re.exec(plain)) {
    const body = (m[1] ?? "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .join(" ");
    if (body) found.push(body);
  }
  return found;
}

function bundleFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...bundleFiles(path));
    else if (!name.endsWith(".map") && name !== "README.md") out.push(path);
  }
  return out;
}

function measure(dir: string): { rawBytes: number; gzipBytes: number } {
  let rawBytes = 0;
  let gzipBytes = 0;
  for (const file of bundleFiles(dir)) {
    const bytes = readFileSync(file);
    rawBytes += bytes.byteLength;
    gzipBytes += gzipSync(bytes, { level: 9 }).byteLength;
  }
  return { rawBytes, gzipBytes };
}

/** The parts of wrangler's resolved config (unstable_readConfig) this check reads. */
export interface ReadConfig {
  name?: string;
  analytics_engine_datasets: { binding: string; dataset?: string }[];
  durable_objects: { bindings: { name: string; class_name: string }[] };
  migrations: { tag: string; new_classes?: string[]; new_sqlite_classes?: string[] }[];
  vars: Record<string, unknown>;
  vpc_services?: { binding: string; service_id: string }[];
  vpc_networks?: { binding: string }[];
  services?: { binding: string }[];
}

/** Binding names declared in an environment (all kinds an engine `binding` could name). */
function fetcherBindings(config: ReadConfig): Set<string> {
  const names = new Set<string>();
  for (const b of config.vpc_services ?? []) names.add(b.binding);
  for (const b of config.vpc_networks ?? []) names.add(b.binding);
  for (const b of config.services ?? []) names.add(b.binding);
  return names;
}

interface EngineRef {
  path: string;
  binding?: unknown;
}

/** The config document as written: a table's object, or the JSON text parsed (undefined if it is not JSON). */
function rawGatewayConfig(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function enginesOf(gatewayConfig: unknown): EngineRef[] {
  const refs: EngineRef[] = [];
  const models = (gatewayConfig as { models?: Record<string, Record<string, unknown>> } | undefined)?.models ?? {};
  for (const [model, pools] of Object.entries(models)) {
    for (const role of ["prefill", "decode", "encode", "regular"]) {
      const pool = pools?.[role];
      if (!Array.isArray(pool)) continue;
      pool.forEach((engine: { binding?: unknown }, i) => refs.push({ path: `models.${model}.${role}.${i}`, binding: engine?.binding }));
    }
  }
  return refs;
}

/** A value left for the operator to fill in: written "<...>" (the template's VPC service_id). */
export const PLACEHOLDER = /^<[^<>]*>$/;

/** Paths of the placeholders in a resolved environment config ([vars] aside: GATEWAY_CONFIG is checked by its parser). */
export function placeholders(value: unknown, path = ""): { path: string; value: string }[] {
  if (typeof value === "string") return PLACEHOLDER.test(value) ? [{ path, value }] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => placeholders(v, `${path}[${i}]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (path === "" && k === "vars" ? [] : placeholders(v, path ? `${path}.${k}` : k)));
}

/** The checks that read the resolved configuration of one environment. `ready`: placeholders
 *  are errors (a real deploy), else warnings. */
export function checkConfig(config: ReadConfig, env: string, ready = false): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  const where = environmentLabel(env);

  if (!config.analytics_engine_datasets.some((d) => d.binding === "METRICS")) {
    errors.push(`${where}: no Analytics Engine binding METRICS ([[analytics_engine_datasets]] is not inherited; repeat it)`);
  }
  const registry = config.durable_objects.bindings.find((b) => b.name === "REGISTRY");
  if (!registry) {
    errors.push(`${where}: no Durable Object binding REGISTRY ([[durable_objects.bindings]] is not inherited; repeat it)`);
  } else {
    if (registry.class_name !== "EngineRegistry") {
      errors.push(`${where}: REGISTRY binds class ${registry.class_name}, the code exports EngineRegistry`);
    }
    const sqlite = config.migrations.some((m) => (m.new_sqlite_classes ?? []).includes(registry.class_name));
    if (!sqlite) errors.push(`${where}: no migration creates ${registry.class_name} as a SQLite class (new_sqlite_classes)`);
  }

  const vars = config.vars;
  if (vars.GATEWAY_CONFIG === undefined) {
    errors.push(`${where}: no GATEWAY_CONFIG var ([vars] is not inherited; repeat it)`);
  } else {
    for (const problem of checkGatewayConfig(vars.GATEWAY_CONFIG, "").problems) {
      errors.push(`${where}: ${problem.startsWith("GATEWAY_CONFIG") ? problem : `GATEWAY_CONFIG ${problem}`}`);
    }
  }
  const gatewayConfig = rawGatewayConfig(vars.GATEWAY_CONFIG);

  if (env === "production") {
    if (vars.DEV_METRICS === "on") errors.push(`${where}: DEV_METRICS = "on" would serve /admin/metrics/recent in production`);
    const dataPlane = (gatewayConfig as { auth?: { data_plane?: string } } | undefined)?.auth?.data_plane;
    if (dataPlane === "open") errors.push(`${where}: GATEWAY_CONFIG auth.data_plane is "open"; production uses "api_keys"`);
  }

  const declared = fetcherBindings(config);
  for (const engine of enginesOf(gatewayConfig)) {
    if (engine.binding === undefined) continue;
    if (typeof engine.binding !== "string" || !declared.has(engine.binding)) {
      errors.push(
        `${where}: GATEWAY_CONFIG ${engine.path} names binding ${JSON.stringify(engine.binding)}, which this environment does not declare (vpc_services / vpc_networks / services); /health would answer 503`,
      );
    }
  }

  for (const p of placeholders(config)) {
    const msg = `${where}: ${p.path} is a placeholder (${JSON.stringify(p.value)}): fill it in before a real deploy (docs/deploy.md)`;
    (ready ? errors : warnings).push(msg);
  }
  return { errors, warnings };
}

export interface CheckOptions {
  /** Placeholders are errors (before a real deploy), not warnings. */
  ready?: boolean;
  /** Keep the dry run's output directory. */
  keepDir?: boolean;
  /** A wrangler config other than the project's wrangler.toml. */
  config?: string;
}

export function configPathOf(opts: CheckOptions): string {
  return resolve(ROOT, opts.config ?? "wrangler.toml");
}

/** Every environment of a wrangler config: "" (the top level), then each [env.*]. */
export function environmentNames(configPath: string): string[] {
  const { rawConfig } = experimental_readRawConfig({ config: configPath });
  return ["", ...Object.keys(rawConfig.env ?? {})];
}

/** The configuration checks of one environment, without bundling: what wrangler resolves
 *  for it, read the way `wrangler deploy --env <env>` reads it. */
export function checkEnvironmentConfig(env: string, opts: CheckOptions = {}): { workerName: string; errors: string[]; warnings: string[] } {
  const configPath = configPathOf(opts);
  let config: ReadConfig;
  try {
    config = unstable_readConfig({ config: configPath, env: env || undefined }, { hideWarnings: true }) as unknown as ReadConfig;
  } catch (e) {
    return { workerName: "", errors: [`cannot read ${configPath}: ${e instanceof Error ? e.message : String(e)}`], warnings: [] };
  }
  return { workerName: config.name ?? "", ...checkConfig(config, env, opts.ready ?? false) };
}

/** The configuration checks and a dry-run bundle of one environment. */
export async function checkEnvironment(env: string, opts: CheckOptions = {}): Promise<EnvCheck> {
  const configPath = configPathOf(opts);
  const outdir = mkdtempSync(join(tmpdir(), `deploy-check-${env || "top"}-`));
  const args = ["deploy", "--dry-run", "--outdir", outdir, "--config", configPath, `--env=${env}`];
  const { workerName, errors, warnings } = checkEnvironmentConfig(env, opts);
  try {
    const run = await runWrangler(args);
    if (run.code !== 0) errors.unshift(`wrangler ${args.join(" ")} exited ${run.code}`);
    for (const w of configWarnings(run.output)) errors.push(`wrangler configuration warning: ${w}`);
    const sizes = run.code === 0 ? measure(outdir) : { rawBytes: 0, gzipBytes: 0 };
    const reported = parseTotalUpload(run.output);
    const raw = Math.max(sizes.rawBytes, reported?.rawBytes ?? 0);
    const gz = Math.max(sizes.gzipBytes, reported?.gzipBytes ?? 0);
    if (run.code === 0 && raw === 0) errors.push("the dry run wrote no bundle");
    if (raw > LIMITS.uncompressed) errors.push(`bundle is ${fmt(raw)} uncompressed, above the ${fmt(LIMITS.uncompressed)} Workers limit`);
    if (gz > LIMITS.gzipPaid) errors.push(`bundle is ${fmt(gz)} gzip, above the paid plan's ${fmt(LIMITS.gzipPaid)}`);
    else if (gz > LIMITS.gzipFree) warnings.push(`bundle is ${fmt(gz)} gzip, above the free plan's ${fmt(LIMITS.gzipFree)} (a paid plan deploys it)`);
    return {
      env,
      workerName,
      rawBytes: sizes.rawBytes,
      gzipBytes: sizes.gzipBytes,
      ...(reported ? { wranglerReported: reported } : {}),
      errors,
      warnings,
      output: run.output,
    };
  } finally {
    if (!opts.keepDir) rmSync(outdir, { recursive: true, force: true });
  }
}

export function fmt(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(2)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function pct(bytes: number, limit: number): string {
  return `${((bytes / limit) * 100).toFixed(1)}%`;
}

export function report(results: EnvCheck[]): string {
  const lines: string[] = [];
  for (const r of results) {
    const name = r.env ? `env ${r.env}` : "top level";
    lines.push(
      `${name} (${r.workerName}): ${fmt(r.rawBytes)} raw (${pct(r.rawBytes, LIMITS.uncompressed)} of 64 MiB), ` +
        `${fmt(r.gzipBytes)} gzip (${pct(r.gzipBytes, LIMITS.gzipFree)} of the free plan's 3 MiB, ${pct(r.gzipBytes, LIMITS.gzipPaid)} of the paid plan's 10 MiB)` +
        (r.wranglerReported ? `; wrangler says ${fmt(r.wranglerReported.rawBytes)} / gzip ${fmt(r.wranglerReported.gzipBytes)}` : ""),
    );
    for (const w of r.warnings) lines.push(`  warning: ${w}`);
    for (const e of r.errors) lines.push(`  ERROR: ${e}`);
  }
  return lines.join("\n");
}

const USAGE = "usage: deploy-check [--env <name>]... [--config <wrangler.toml>] [--ready] [--keep]";

async function main(argv: string[]): Promise<number> {
  const envs: string[] = [];
  let ready = false;
  let keepDir = false;
  let config: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--env" || a === "-e") envs.push(argv[++i] ?? "");
    else if (a?.startsWith("--env=")) envs.push(a.slice("--env=".length));
    else if (a === "--ready") ready = true;
    else if (a === "--strict") continue; // the binding check it turned on is always an error now
    else if (a === "--keep") keepDir = true;
    else if (a === "--config" || a === "-c") config = argv[++i];
    else {
      console.error(`deploy-check: unknown argument ${a}\n${USAGE}`);
      return 2;
    }
  }
  const opts: CheckOptions = { ready, keepDir, ...(config ? { config } : {}) };
  const targets = envs.length > 0 ? envs : environmentNames(configPathOf(opts));
  const results = await Promise.all(targets.map((env) => checkEnvironment(env, opts)));
  console.log(report(results));
  const failed = results.filter((r) => r.errors.length > 0);
  for (const r of failed) {
    if (r.errors.some((e) => e.startsWith("wrangler "))) {
      console.error(`\n--- wrangler output (${r.env || "top level"}) ---\n${r.output}`);
    }
  }
  console.log(failed.length === 0 ? "deploy-check: ok" : `deploy-check: FAILED (${failed.map((r) => r.env || "top level").join(", ")})`);
  return failed.length === 0 ? 0 : 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
