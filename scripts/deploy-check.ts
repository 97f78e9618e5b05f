// `npm run deploy:check`: proves the Worker bundles and deploys, offline. For each environment of
// wrangler.toml (the top level and [env.production] unless --env says otherwise) it runs
// `wrangler deploy --dry-run --outdir <tmp>` (no account, no network: WRANGLER_SEND_METRICS=false),
// then checks
//   - wrangler exited 0 and printed no configuration warning (an unknown key, a var missing from
//     an environment, ...);
//   - the bundle is within the Workers size limits: 64 MiB uncompressed on every plan, and
//     10 MiB gzip (paid plan; no plan deploys more). Above the free plan's 3 MiB gzip it warns;
//   - the bindings the code needs are there: METRICS (Analytics Engine dataset) and REGISTRY
//     (Durable Object EngineRegistry, created by a migration as a SQLite class);
//   - an environment named "production" does not serve the dev metrics view and does not leave
//     the data plane open;
//   - engine entries of GATEWAY_CONFIG that name a "binding" find it declared (vpc_services,
//     vpc_networks or services). Reported as a warning, an error with --strict: the committed
//     production config keeps the VPC service commented until it has a real service_id.
// It prints the sizes per environment and exits 1 on any error.
//
//   npm run deploy:check                      # top level + production
//   npm run deploy:check -- --env production  # one environment ("" = the top level)
//   npm run deploy:check -- --strict          # before a real deploy
//   npm run deploy:check -- --config other.toml
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { unstable_readConfig } from "wrangler";

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

/** The checks that read the resolved configuration of one environment. */
export function checkConfig(config: ReadConfig, env: string, strict: boolean): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  const where = env ? `[env.${env}]` : "the top level";

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
  let gatewayConfig: unknown;
  if (typeof vars.GATEWAY_CONFIG === "string") {
    try {
      gatewayConfig = JSON.parse(vars.GATEWAY_CONFIG);
    } catch (e) {
      errors.push(`${where}: GATEWAY_CONFIG is not JSON: ${(e as Error).message}`);
    }
  } else {
    errors.push(`${where}: no GATEWAY_CONFIG var ([vars] is not inherited; repeat it)`);
  }

  if (env === "production") {
    if (vars.DEV_METRICS === "on") errors.push(`${where}: DEV_METRICS = "on" would serve /admin/metrics/recent in production`);
    const dataPlane = (gatewayConfig as { auth?: { data_plane?: string } } | undefined)?.auth?.data_plane;
    if (dataPlane === "open") errors.push(`${where}: GATEWAY_CONFIG auth.data_plane is "open"; production uses "api_keys"`);
  }

  const declared = fetcherBindings(config);
  for (const engine of enginesOf(gatewayConfig)) {
    if (engine.binding === undefined) continue;
    if (typeof engine.binding !== "string" || !declared.has(engine.binding)) {
      const msg = `${where}: GATEWAY_CONFIG ${engine.path} names binding ${JSON.stringify(engine.binding)}, which this environment does not declare (vpc_services / vpc_networks / services)`;
      (strict ? errors : warnings).push(msg);
    }
  }
  return { errors, warnings };
}

export interface CheckOptions {
  /** Errors, not warnings, for engine bindings the environment does not declare. */
  strict?: boolean;
  /** Keep the dry run's output directory. */
  keepDir?: boolean;
  /** A wrangler config other than the project's wrangler.toml. */
  config?: string;
}

export async function checkEnvironment(env: string, opts: CheckOptions = {}): Promise<EnvCheck> {
  const configPath = resolve(ROOT, opts.config ?? "wrangler.toml");
  const outdir = mkdtempSync(join(tmpdir(), `deploy-check-${env || "top"}-`));
  const args = ["deploy", "--dry-run", "--outdir", outdir, "--config", configPath];
  if (env) args.push("--env", env);
  const errors: string[] = [];
  const warnings: string[] = [];
  let config: ReadConfig | undefined;
  try {
    config = unstable_readConfig({ config: configPath, env: env || undefined }, { hideWarnings: true }) as unknown as ReadConfig;
  } catch (e) {
    errors.push(`cannot read ${configPath}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    const run = await runWrangler(args);
    if (run.code !== 0) errors.push(`wrangler ${args.join(" ")} exited ${run.code}`);
    for (const w of configWarnings(run.output)) errors.push(`wrangler configuration warning: ${w}`);
    const sizes = run.code === 0 ? measure(outdir) : { rawBytes: 0, gzipBytes: 0 };
    const reported = parseTotalUpload(run.output);
    const raw = Math.max(sizes.rawBytes, reported?.rawBytes ?? 0);
    const gz = Math.max(sizes.gzipBytes, reported?.gzipBytes ?? 0);
    if (run.code === 0 && raw === 0) errors.push("the dry run wrote no bundle");
    if (raw > LIMITS.uncompressed) errors.push(`bundle is ${fmt(raw)} uncompressed, above the ${fmt(LIMITS.uncompressed)} Workers limit`);
    if (gz > LIMITS.gzipPaid) errors.push(`bundle is ${fmt(gz)} gzip, above the paid plan's ${fmt(LIMITS.gzipPaid)}`);
    else if (gz > LIMITS.gzipFree) warnings.push(`bundle is ${fmt(gz)} gzip, above the free plan's ${fmt(LIMITS.gzipFree)} (a paid plan deploys it)`);
    if (config) {
      const checked = checkConfig(config, env, opts.strict ?? false);
      errors.push(...checked.errors);
      warnings.push(...checked.warnings);
    }
    return {
      env,
      workerName: config?.name ?? "",
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

async function main(argv: string[]): Promise<number> {
  const envs: string[] = [];
  let strict = false;
  let keepDir = false;
  let config: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--env" || a === "-e") envs.push(argv[++i] ?? "");
    else if (a?.startsWith("--env=")) envs.push(a.slice("--env=".length));
    else if (a === "--strict") strict = true;
    else if (a === "--keep") keepDir = true;
    else if (a === "--config" || a === "-c") config = argv[++i];
    else {
      console.error(`deploy-check: unknown argument ${a}\nusage: deploy-check [--env <name>]... [--config <wrangler.toml>] [--strict] [--keep]`);
      return 2;
    }
  }
  const targets = envs.length > 0 ? envs : ["", "production"];
  const results = await Promise.all(targets.map((env) => checkEnvironment(env, { strict, keepDir, ...(config ? { config } : {}) })));
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
