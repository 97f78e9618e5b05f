// `npm run check-config [-- FILE]`: validates a gateway config with the gateway's own loader
// (src/config/load.ts), without starting anything, and prints each error. FILE is a JSON
// config file, or a wrangler config whose GATEWAY_CONFIG var is checked; the default is the
// project's wrangler.toml. Exit code 0 = valid, 1 = invalid, 2 = could not read the input.
import { readFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, loadConfig } from "../src/config/load.js";
import { readWranglerVar } from "./wrangler-config.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const USAGE = "usage: npm run check-config [-- FILE]   (FILE: a JSON gateway config or a wrangler.toml; default wrangler.toml)";

async function configText(file: string): Promise<{ text: string | undefined; source: string }> {
  const rel = relative(process.cwd(), file);
  const shown = rel === "" || rel.startsWith("..") ? file : rel;
  if (/\.(toml|jsonc)$/.test(file) || /wrangler\.json$/.test(file)) {
    const value = await readWranglerVar(file, "GATEWAY_CONFIG");
    if (value !== undefined && typeof value !== "string") return { text: JSON.stringify(value), source: `${shown} [vars] GATEWAY_CONFIG` };
    return { text: value, source: `${shown} [vars] GATEWAY_CONFIG` };
  }
  return { text: await readFile(file, "utf8"), source: shown };
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  if (args.length > 1 || args[0]?.startsWith("-")) {
    console.error(USAGE);
    return 2;
  }
  const file = args[0] ?? join(ROOT, "wrangler.toml");
  let input: { text: string | undefined; source: string };
  try {
    input = await configText(file);
  } catch (err) {
    console.error(`check-config: ${(err as Error).message}`);
    return 2;
  }
  try {
    const config = loadConfig(input.text);
    const models = Object.entries(config.models);
    const engines = models.reduce((n, [, m]) => n + m.prefill.length + m.decode.length + m.encode.length + m.regular.length, 0);
    console.log(`check-config: ${input.source}: valid (${models.length} model${models.length === 1 ? "" : "s"}: ${models.map(([name]) => name).join(", ")}; ${engines} config engine${engines === 1 ? "" : "s"})`);
    return 0;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const errors = err.problems;
    console.error(`check-config: ${input.source}: invalid, ${errors.length} error${errors.length === 1 ? "" : "s"}:`);
    for (const e of errors) console.error(`  - ${e}`);
    return 1;
  }
}

process.exitCode = await main();
