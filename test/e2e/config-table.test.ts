// GATEWAY_CONFIG written as a TOML table, through the real path: wrangler reads the table and
// binds it as JSON, workerd hands the Worker an object, and the gateway serves from it (it used
// to answer every request with 500 internal_error). `wrangler dev` on a temporary wrangler.toml.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { ROOT } from "../support/wrangler-copy.js";

let cluster: RunningCluster;
let gateway: WranglerDev;
let dir: string;

beforeAll(async () => {
  cluster = await startCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: "table-model", port: 0 }] });
  dir = mkdtempSync(join(tmpdir(), "config-table-"));
  const toml = [
    'name = "config-table"',
    `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`,
    'compatibility_date = "2026-11-17"',
    'compatibility_flags = ["nodejs_compat_do_not_populate_process_env"]',
    "",
    "[vars.GATEWAY_CONFIG]",
    'auth = { data_plane = "open" }',
    "health = { disabled = true }",
    "",
    '[vars.GATEWAY_CONFIG.models."table-model"]',
    `regular = [{ name = "engine", url = ${JSON.stringify(cluster.engine("engine").url)}, transport = "openai-http" }]`,
    "",
  ].join("\n");
  writeFileSync(join(dir, "wrangler.toml"), toml);
  gateway = await startWranglerDev(undefined, 90_000, { configPath: join(dir, "wrangler.toml") });
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("serves /health and a completion from a config written as a TOML table", async () => {
  const health = await fetch(`${gateway.url}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: "ok" });
  const res = await fetch(`${gateway.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "table-model", prompt: "hi", max_tokens: 2 }),
  });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
});
