// `npm run deploy`: deploys [env.production] of wrangler.toml, never the top level by accident.
// A bare `wrangler deploy` ships the top level, which is local development (simulated cluster,
// data plane open, DEV_METRICS on). Here
//   - no --env means --env production; another [env.<name>] can be named with --env;
//   - the top level deploys only with --dev-environment (and never together with --env <name>);
//   - before a real deploy, `deploy:check --ready` runs for that environment (dry-run bundle,
//     GATEWAY_CONFIG through the gateway's parser, bindings, no placeholder left); before
//     --dry-run only the configuration checks run, placeholders being warnings;
//   - every other argument goes to `wrangler deploy` as given.
//
//   npm run deploy                           # [env.production]
//   npm run deploy -- --dry-run --outdir d   # builds [env.production], uploads nothing
//   npm run deploy -- --dev-environment      # the top level, on purpose
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkEnvironment, checkEnvironmentConfig, environmentNames, report, type CheckOptions } from "./deploy-check.js";
import { environmentLabel } from "./wrangler-config.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const WRANGLER_BIN = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const DEV_FLAG = "--dev-environment";
export const DEFAULT_ENV = "production";

const USAGE = `usage: npm run deploy [-- [--env <name>] [${DEV_FLAG}] [wrangler deploy arguments...]]
  no --env:           deploys [env.${DEFAULT_ENV}]
  ${DEV_FLAG}:  deploys the top level (local development) on purpose
  --dry-run:          builds the environment, uploads nothing (placeholders allowed)`;

export interface DeployPlan {
  /** The environment deployed: "" = the top level. */
  env: string;
  dryRun: boolean;
  /** --config as given, when given. */
  config?: string;
  /** The arguments after `wrangler`: deploy, the environment, then the caller's own. */
  wranglerArgs: string[];
}

/** The --config the caller gave (wrangler's own flag, passed on), if any. */
export function configArg(argv: string[]): string | undefined {
  const i = argv.findIndex((a) => a === "--config" || a === "-c");
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith("--config="))?.slice("--config=".length);
}

/** Reads the caller's arguments; `envNames` are the [env.*] sections wrangler.toml has. */
export function planDeploy(argv: string[], envNames: string[]): DeployPlan | { error: string } {
  let env: string | undefined;
  let dev = false;
  const passed: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const inline = /^(--env|-e)=(.*)$/.exec(a);
    if (a === DEV_FLAG) dev = true;
    else if (a === "--env" || a === "-e") {
      if (i + 1 >= argv.length) return { error: `${a} needs an environment name` };
      env = argv[++i]!;
    } else if (inline) env = inline[2]!;
    else passed.push(a);
  }
  if (dev && env) return { error: `${DEV_FLAG} deploys the top level; it cannot be combined with --env ${env}` };
  if (!dev && env === "") {
    return { error: `the top level of wrangler.toml is local development (data plane open, DEV_METRICS on); deploy it only with ${DEV_FLAG}` };
  }
  const target = dev ? "" : (env ?? DEFAULT_ENV);
  if (target !== "" && !envNames.includes(target)) {
    return { error: `wrangler.toml has no [env.${target}] (environments: ${envNames.map((n) => `[env.${n}]`).join(", ") || "none"})` };
  }
  const dryRun = passed.some((a) => a === "--dry-run" || a === "--dry-run=true");
  const config = configArg(argv);
  return { env: target, dryRun, ...(config !== undefined ? { config } : {}), wranglerArgs: ["deploy", `--env=${target}`, ...passed] };
}

/** The checks before handing over to wrangler: all of deploy:check --ready for a real deploy,
 *  the configuration checks alone (no bundle, placeholders as warnings) for a dry run. */
export async function preflight(plan: DeployPlan): Promise<{ ok: boolean; text: string }> {
  const opts: CheckOptions = { ready: !plan.dryRun, ...(plan.config !== undefined ? { config: plan.config } : {}) };
  if (plan.dryRun) {
    const r = checkEnvironmentConfig(plan.env, opts);
    const lines = [...r.warnings.map((w) => `  warning: ${w}`), ...r.errors.map((e) => `  ERROR: ${e}`)];
    return { ok: r.errors.length === 0, text: [`deploy: checks of ${environmentLabel(plan.env)} (${r.workerName})`, ...lines].join("\n") };
  }
  const r = await checkEnvironment(plan.env, opts);
  return { ok: r.errors.length === 0, text: `deploy: deploy:check --ready\n${report([r])}` };
}

function runWrangler(args: string[]): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [WRANGLER_BIN, ...args], { cwd: process.cwd(), stdio: "inherit" });
    // Ctrl-C reaches wrangler directly (same process group); SIGTERM is passed on, ahead of the
    // exit-on-signal handler that importing wrangler (through deploy-check) installed here.
    process.prependListener("SIGTERM", () => child.kill("SIGTERM"));
    child.on("error", reject);
    child.on("exit", (code, signal) => resolvePromise(code ?? (signal ? 1 : 0)));
  });
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  const configPath = resolve(process.cwd(), configArg(argv) ?? join(ROOT, "wrangler.toml"));
  const plan = planDeploy(argv, environmentNames(configPath).filter(Boolean));
  if ("error" in plan) {
    console.error(`deploy: ${plan.error}\n${USAGE}`);
    return 2;
  }
  const checked = await preflight({ ...plan, config: configPath });
  console.log(checked.text);
  if (!checked.ok) {
    console.error(`deploy: not deploying ${environmentLabel(plan.env)}: fix the errors above (docs/deploy.md)`);
    return 1;
  }
  console.log(`deploy: wrangler ${plan.wranglerArgs.join(" ")}`);
  return runWrangler(plan.wranglerArgs);
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
