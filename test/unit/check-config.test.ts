// `npm run check-config` (scripts/check-config.ts) checks the GATEWAY_CONFIG of every
// environment of a wrangler config with the gateway's own parser, JSON text or TOML table, and
// fails naming the environment and the field.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { checkFile } from "../../scripts/check-config.js";
import { checkEnvironmentConfig } from "../../scripts/deploy-check.js";
import { COMMITTED_WRANGLER, removeWranglerCopies, replaceOnce, ROOT, wranglerCopy } from "../support/wrangler-copy.js";

afterAll(removeWranglerCopies);

/** TOML for a JSON value, as an inline table (the form a person might write in wrangler.toml). */
function inlineToml(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineToml).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)} = ${inlineToml(v)}`)
      .join(", ")} }`;
  }
  return JSON.stringify(value);
}

/** [env.production]'s GATEWAY_CONFIG JSON text in the committed file. */
const PRODUCTION_JSON = /(\[env\.production\.vars\][\s\S]*?GATEWAY_CONFIG = )'''([\s\S]*?)'''/;

/** A copy whose production GATEWAY_CONFIG is a TOML table; `edit` changes the config first. */
function tableCopy(edit: (config: Record<string, unknown>) => void = () => {}): string {
  return wranglerCopy((t) => {
    const m = PRODUCTION_JSON.exec(t);
    if (!m) throw new Error("no [env.production.vars] GATEWAY_CONFIG = '''...''' in wrangler.toml");
    const config = JSON.parse(m[2]!) as Record<string, unknown>;
    edit(config);
    return t.replace(PRODUCTION_JSON, `$1${inlineToml(config)}`);
  });
}

async function runCheckConfig(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "check-config.ts"), file], { cwd: ROOT, encoding: "utf8" });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("check-config over wrangler.toml", () => {
  it("checks every environment of the committed file, and each is valid", async () => {
    const verdicts = await checkFile(COMMITTED_WRANGLER);
    expect(verdicts.map((v) => [v.source.replace(/^.*wrangler\.toml /, ""), v.problems])).toEqual([
      ["[vars] GATEWAY_CONFIG", []],
      ["[env.production.vars] GATEWAY_CONFIG", []],
    ]);
  });

  it("a typo in [env.production]'s config exits 1 naming the environment and the field", { timeout: 60_000 }, async () => {
    const typo = wranglerCopy((t) => replaceOnce(t, '"decode": [\n        { "name": "decode-0", "url"', '"decode": [\n        { "name": "decode-0", "ulr"'));
    const run = await runCheckConfig(typo);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/\[vars\] GATEWAY_CONFIG: valid/);
    expect(run.stderr).toMatch(/\[env\.production\.vars\] GATEWAY_CONFIG: invalid, 2 errors:/);
    expect(run.stderr).toContain('- models.my-model.decode.0: Unrecognized key: "ulr"');
    expect(run.stderr).toContain("- models.my-model.decode.0.url: Invalid input");
  });

  it("an environment without GATEWAY_CONFIG is an error ([vars] is not inherited)", async () => {
    const staging = wranglerCopy((t) => `${t}\n[env.staging]\n[[env.staging.analytics_engine_datasets]]\nbinding = "METRICS"\n[env.staging.vars]\nDEV_METRICS = "off"\n`);
    const verdicts = await checkFile(staging);
    expect(verdicts.map((v) => v.problems)).toEqual([[], [], [expect.stringMatching(/^GATEWAY_CONFIG is not set \(\[vars\] is not inherited .*\[env\.staging\.vars\]\)/)]]);
  });

  it("accepts GATEWAY_CONFIG written as a TOML table, and checks it the same way", async () => {
    const table = tableCopy();
    expect((await checkFile(table)).map((v) => v.problems)).toEqual([[], []]);
    expect(checkEnvironmentConfig("production", { config: table }).errors).toEqual([]);

    const typo = tableCopy((c) => ((c.health as Record<string, unknown>) = { interval_sec: 5 }));
    expect((await checkFile(typo))[1]!.problems).toEqual(['health: Unrecognized key: "interval_sec"']);
    expect(checkEnvironmentConfig("production", { config: typo }).errors).toEqual(['[env.production]: GATEWAY_CONFIG health: Unrecognized key: "interval_sec"']);
  });
});
