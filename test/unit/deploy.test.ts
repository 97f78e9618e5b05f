// `npm run deploy` (scripts/deploy.ts): deploys [env.production] unless told otherwise, the
// top level only with --dev-environment, and checks before handing over to wrangler. No test
// here runs a real deploy: the real-deploy path is tested through preflight(), which is what
// stands between it and wrangler.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { planDeploy, preflight } from "../../scripts/deploy.js";
import { removeWranglerCopies, replaceOnce, ROOT, wranglerCopy } from "../support/wrangler-copy.js";

afterAll(removeWranglerCopies);

const ENVS = ["production", "staging"];

describe("deploy: which environment", () => {
  it.each([
    [[], { env: "production", dryRun: false, wranglerArgs: ["deploy", "--env=production"] }],
    [["--dry-run", "--outdir", "d"], { env: "production", dryRun: true, wranglerArgs: ["deploy", "--env=production", "--dry-run", "--outdir", "d"] }],
    [["--env", "staging", "--minify"], { env: "staging", dryRun: false, wranglerArgs: ["deploy", "--env=staging", "--minify"] }],
    [["-e", "production"], { env: "production", wranglerArgs: ["deploy", "--env=production"] }],
    [["--env=staging"], { env: "staging", wranglerArgs: ["deploy", "--env=staging"] }],
    [["--dev-environment", "--dry-run"], { env: "", dryRun: true, wranglerArgs: ["deploy", "--env=", "--dry-run"] }],
    [["--dev-environment", "--env="], { env: "", wranglerArgs: ["deploy", "--env="] }],
    [["-c", "other.toml"], { env: "production", config: "other.toml", wranglerArgs: ["deploy", "--env=production", "-c", "other.toml"] }],
  ])("%j plans %j", (argv, plan) => {
    expect(planDeploy(argv, ENVS)).toMatchObject(plan);
  });

  it.each([
    [["--env="], /top level of wrangler\.toml is local development .* only with --dev-environment/],
    [["--env", ""], /only with --dev-environment/],
    [["--dev-environment", "--env", "production"], /cannot be combined with --env production/],
    [["--env", "prod"], /no \[env\.prod\] \(environments: \[env\.production\], \[env\.staging\]\)/],
    [["--env"], /--env needs an environment name/],
  ])("%j is refused", (argv, message) => {
    const plan = planDeploy(argv, ENVS);
    expect(plan).toEqual({ error: expect.stringMatching(message) });
  });
});

describe("deploy: checks first", () => {
  it("a real deploy of the committed template stops at its placeholder, after the full check", { timeout: 90_000 }, async () => {
    const plan = planDeploy([], ["production"]);
    if ("error" in plan) throw new Error(plan.error);
    const { ok, text } = await preflight(plan);
    expect(ok).toBe(false);
    expect(text).toMatch(/vllm-edge-gateway-production\): [\d.]+ KiB raw/); // it bundled
    expect(text).toMatch(/ERROR: \[env\.production\]: vpc_services\[0\]\.service_id is a placeholder/);
  });

  it("a dry run accepts the placeholder with a warning, but not a broken config", async () => {
    const plan = planDeploy(["--dry-run"], ["production"]);
    if ("error" in plan) throw new Error(plan.error);
    expect(await preflight(plan)).toEqual({ ok: true, text: expect.stringMatching(/warning: \[env\.production\]: vpc_services\[0\]\.service_id is a placeholder/) });
    const mismatched = wranglerCopy((t) => replaceOnce(t, /^binding = "VLLM_PRIVATE"$/m, 'binding = "VLLM_OTHER"'));
    const broken = await preflight({ ...plan, config: mismatched });
    expect(broken.ok).toBe(false);
    expect(broken.text).toMatch(/ERROR: \[env\.production\]: GATEWAY_CONFIG models\.my-model\.prefill\.0 names binding "VLLM_PRIVATE"/);
  });

  it("`npm run deploy -- --dry-run` builds [env.production]; `--env=` alone is refused before wrangler runs", { timeout: 90_000 }, async () => {
    const outdir = mkdtempSync(join(tmpdir(), "deploy-dry-"));
    try {
      const run = promisify(execFile);
      const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" };
      const script = join(ROOT, "scripts", "deploy.ts");
      const dry = await run(process.execPath, ["--import", "tsx", script, "--dry-run", "--outdir", outdir], { cwd: ROOT, env, encoding: "utf8" });
      const out = dry.stdout + dry.stderr;
      expect(out).toContain("deploy: wrangler deploy --env=production --dry-run");
      expect(out).toMatch(/env\.VLLM_PRIVATE \(<vpc service id>\)\s+VPC Service/); // production's bindings
      expect(out).toMatch(/env\.DEV_METRICS \("off"\)/);
      expect(existsSync(join(outdir, "index.js"))).toBe(true);

      const refused = await run(process.execPath, ["--import", "tsx", script, "--env="], { cwd: ROOT, env, encoding: "utf8" }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/deploy it only with --dev-environment/);
      expect(refused.stdout).not.toMatch(/deploy: wrangler/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
