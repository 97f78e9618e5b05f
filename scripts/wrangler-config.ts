// Reads a `[vars]` entry of wrangler.toml with wrangler's own config reader, in a child
// process: importing wrangler installs SIGINT/SIGTERM handlers that call process.exit(), which
// would cut short the shutdown of the script that imported it.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const READ = `
const { experimental_readRawConfig } = await import("wrangler");
const { rawConfig } = experimental_readRawConfig({ config: process.argv[1] });
process.stdout.write(JSON.stringify(rawConfig.vars?.[process.argv[2]] ?? null));
`;

/** The var's value (a string for GATEWAY_CONFIG), or undefined when wrangler.toml does not set it. */
export async function readWranglerVar(configPath: string, name: string): Promise<unknown> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", READ, configPath, name], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`could not read ${configPath}: ${(e.stderr ?? "").trim() || e.message}`);
  }
  const value = JSON.parse(stdout) as unknown;
  return value === null ? undefined : value;
}

/** A var's value in one environment of a wrangler config. */
export interface EnvironmentVar {
  /** "" = the top level; else the name of its [env.<name>]. */
  env: string;
  /** A string, a TOML table's object, ...; undefined when that environment does not set it. */
  value: unknown;
}

/** The part of wrangler's raw config (experimental_readRawConfig) that holds vars. */
export interface RawVars {
  vars?: Record<string, unknown>;
  env?: Record<string, { vars?: Record<string, unknown> } | undefined>;
}

/** The var in every environment, the top level first. [vars] is not inherited, so each
 *  environment's own value is what a deploy of it binds. */
export function varByEnv(raw: RawVars, name: string): EnvironmentVar[] {
  return [
    { env: "", value: raw.vars?.[name] },
    ...Object.entries(raw.env ?? {}).map(([env, section]) => ({ env, value: section?.vars?.[name] })),
  ];
}

/** How an environment is named in messages: "the top level" or "[env.<name>]". */
export function environmentLabel(env: string): string {
  return env ? `[env.${env}]` : "the top level";
}
