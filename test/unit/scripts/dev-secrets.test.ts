// The admin token reaches `wrangler dev` in an env file (scripts/dev-secrets.ts), not on its
// command line. Each value must come back unchanged through wrangler's own reader of that file
// (dotenv, then dotenv-expand: quotes, `#`, `$NAME` and `\$` are all special to it), and the
// files wrangler would have read by itself must still be passed.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { defaultEnvFiles, envFileLine, writeDevSecrets } from "../../../scripts/dev-secrets.js";

// In a child process: importing wrangler installs signal handlers (see scripts/wrangler-config.ts).
const READ = `
const { unstable_getVarsForDev } = await import("wrangler");
const vars = unstable_getVarsForDev(process.argv[1], JSON.parse(process.argv[2]), {}, undefined, true);
process.stdout.write(JSON.stringify(Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, v.value]))));
`;

async function wranglerReads(configDir: string, envFiles: string[]): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", READ, join(configDir, "wrangler.toml"), JSON.stringify(envFiles)], {
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true" },
  });
  return JSON.parse(stdout) as Record<string, string>;
}

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), "dev-secrets-test-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const TRICKY = ["local-0123abcd", "a#b c", "$HOME", "${HOME}", "a\\$b", "ends\\", "it's", 'say "hi"', "x=y", "back`tick", "\\n"];

describe("envFileLine", () => {
  it("every value comes back unchanged through wrangler's env-file reader", async () => {
    const dir = scratch();
    const file = join(dir, "secrets.env");
    writeFileSync(file, TRICKY.map((v, i) => envFileLine(`T${i}`, v)).join(""));
    const read = await wranglerReads(dir, [file]);
    expect(TRICKY.map((_, i) => read[`T${i}`])).toEqual(TRICKY);
  }, 30_000);

  it("refuses what it cannot write", () => {
    expect(() => envFileLine("ADMIN_TOKEN", "a\nb")).toThrow(/ADMIN_TOKEN: must be a single line/);
    expect(() => envFileLine("ADMIN_TOKEN", "a'b`c")).toThrow(/ADMIN_TOKEN: contains both/);
  });
});

describe("writeDevSecrets", () => {
  it("passes .dev.vars first (wrangler reads it no more once given --env-file); the token wins", async () => {
    const dir = scratch();
    writeFileSync(join(dir, ".dev.vars"), "OTHER=kept\nADMIN_TOKEN=old\n");
    const secrets = writeDevSecrets(dir, { ADMIN_TOKEN: "new" });
    try {
      expect(secrets.args).toEqual(["--env-file", join(dir, ".dev.vars"), "--env-file", secrets.path]);
      expect(statSync(secrets.path).mode & 0o777).toBe(0o600);
      expect(statSync(join(secrets.path, "..")).mode & 0o777).toBe(0o700);
      expect(await wranglerReads(dir, secrets.args.filter((a) => a !== "--env-file"))).toEqual({ OTHER: "kept", ADMIN_TOKEN: "new" });
    } finally {
      secrets.remove();
    }
    expect(() => statSync(secrets.path)).toThrow();
  }, 30_000);

  it("without .dev.vars, the .env files wrangler would read", () => {
    const dir = scratch();
    expect(defaultEnvFiles(dir, {})).toEqual([]);
    writeFileSync(join(dir, ".env.local"), "A=1\n");
    writeFileSync(join(dir, ".env"), "A=0\n");
    expect(defaultEnvFiles(dir, {})).toEqual([join(dir, ".env"), join(dir, ".env.local")]);
    expect(defaultEnvFiles(dir, { CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "false" })).toEqual([]);
  });
});
