// `npm run check-config [-- FILE]`: validates gateway configs with the gateway's own parser
// (src/config/load.ts), without starting anything, and prints each error. FILE is a JSON
// config file, or a wrangler config whose GATEWAY_CONFIG var is checked in EVERY environment
// (the top level and each [env.*]: [vars] is not inherited, so each is what its deploy binds),
// as JSON text or a TOML table; the default is the project's wrangler.toml.
// Exit code 0 = all valid, 1 = one is invalid, 2 = could not read the input.
import { readFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";
import { ConfigError, parseConfig } from "../src/config/load.js";
import { varByEnv, type RawVars } from "./wrangler-config.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const USAGE = "usage: npm run check-config [-- FILE]   (FILE: a JSON gateway config or a wrangler.toml; default wrangler.toml)";

/** The verdict on one config document. */
export interface ConfigVerdict {
  /** Where it came from: "wrangler.toml [env.production.vars] GATEWAY_CONFIG", "my.json". */
  source: string;
  /** Each problem naming its field; empty = valid. */
  problems: string[];
  /** For a valid config: its models and engine count. */
  summary?: string;
}

/** Runs the gateway's parser over one GATEWAY_CONFIG value (JSON text or a table's object). */
export function checkGatewayConfig(value: unknown, source: string): ConfigVerdict {
  try {
    const config = parseConfig(value as string | object | undefined);
    const models = Object.entries(config.models);
    const engines = models.reduce((n, [, m]) => n + m.prefill.length + m.decode.length + m.encode.length + m.regular.length, 0);
    const summary = `${models.length} model${models.length === 1 ? "" : "s"}: ${models.map(([name]) => name).join(", ")}; ${engines} config engine${engines === 1 ? "" : "s"}`;
    return { source, problems: [], summary };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { source, problems: [...err.problems] };
  }
}

function shown(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel === "" || rel.startsWith("..") ? file : rel;
}

/** One verdict per document: each environment of a wrangler config, or the JSON file. */
export async function checkFile(file: string): Promise<ConfigVerdict[]> {
  if (/\.(toml|jsonc)$/.test(file) || /wrangler\.json$/.test(file)) {
    // In this process: a one-shot command, so wrangler's exit-on-signal handlers do no harm.
    let raw: RawVars;
    try {
      raw = experimental_readRawConfig({ config: file }).rawConfig as RawVars;
    } catch (err) {
      throw new Error(`could not read ${file}: ${(err as Error).message}`);
    }
    return varByEnv(raw, "GATEWAY_CONFIG").map(({ env, value }) => {
      const source = `${shown(file)} ${env ? `[env.${env}.vars]` : "[vars]"} GATEWAY_CONFIG`;
      if (value === undefined) {
        const why = env ? ` ([vars] is not inherited by environments: repeat it in [env.${env}.vars])` : "";
        return { source, problems: [`GATEWAY_CONFIG is not set${why}`] };
      }
      return checkGatewayConfig(value, source);
    });
  }
  return [checkGatewayConfig(await readFile(file, "utf8"), shown(file))];
}

/** The report lines: one per valid document, a header and one line per problem otherwise. */
export function formatVerdicts(verdicts: ConfigVerdict[]): { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  for (const v of verdicts) {
    if (v.problems.length === 0) {
      out.push(`check-config: ${v.source}: valid (${v.summary})`);
      continue;
    }
    err.push(`check-config: ${v.source}: invalid, ${v.problems.length} error${v.problems.length === 1 ? "" : "s"}:`);
    for (const p of v.problems) err.push(`  - ${p}`);
  }
  return { out, err };
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  if (args.length > 1 || args[0]?.startsWith("-")) {
    console.error(USAGE);
    return 2;
  }
  let verdicts: ConfigVerdict[];
  try {
    verdicts = await checkFile(args[0] ?? join(ROOT, "wrangler.toml"));
  } catch (err) {
    console.error(`check-config: ${(err as Error).message}`);
    return 2;
  }
  const { out, err } = formatVerdicts(verdicts);
  for (const line of out) console.log(line);
  for (const line of err) console.error(line);
  return verdicts.every((v) => v.problems.length === 0) ? 0 : 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
