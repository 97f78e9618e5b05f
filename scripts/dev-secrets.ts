// Secrets for `wrangler dev` handed over in a file, not on its command line, where `ps` shows
// them to every user of the machine (`--var ADMIN_TOKEN:...`). The file lives in a private
// temporary directory (0700, the file 0600) and goes to wrangler with `--env-file`, which
// wrangler 4 reads as the Worker's secrets in local dev. Given any --env-file, wrangler stops
// reading .dev.vars / .env by itself, so the files it would have read come first (ours last
// wins). wrangler also copies env-file values into its own environment and its workerd
// processes' (readable by the same user and root, not by others).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface DevSecretsFile {
  /** `--env-file` arguments for wrangler dev. */
  args: string[];
  path: string;
  /** Removes the file and its directory. */
  remove(): void;
}

/** NAME='value' such that wrangler's env-file reader (dotenv, then dotenv-expand) gives back
 *  `value`: quoted, so `#`, spaces and `=` stay; every `$` escaped, so nothing is expanded. */
export function envFileLine(name: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`${name}: must be a single line`);
  // Not double quotes: dotenv turns \n inside them into a newline.
  const quote = ["'", "`"].find((q) => !value.includes(q));
  if (quote === undefined) throw new Error(`${name}: contains both ' and \`; choose a value without one of them`);
  return `${name}=${quote}${value.replaceAll("$", "\\$")}${quote}\n`;
}

/** The files wrangler dev reads secrets from when given no --env-file: .dev.vars next to the
 *  config, else .env and .env.local (unless CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV=false). */
export function defaultEnvFiles(configDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const devVars = join(configDir, ".dev.vars");
  if (existsSync(devVars)) return [devVars];
  if (env.CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV === "false") return [];
  return [".env", ".env.local"].map((f) => join(configDir, f)).filter((f) => existsSync(f));
}

export function writeDevSecrets(configDir: string, secrets: Record<string, string>): DevSecretsFile {
  const lines = Object.entries(secrets).map(([name, value]) => envFileLine(name, value));
  const dir = mkdtempSync(join(tmpdir(), "vllm-edge-dev-secrets-"));
  const path = join(dir, "secrets.env");
  writeFileSync(path, lines.join(""), { mode: 0o600 });
  const files = [...defaultEnvFiles(configDir), path];
  return { args: files.flatMap((f) => ["--env-file", f]), path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
