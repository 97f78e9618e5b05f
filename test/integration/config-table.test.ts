// GATEWAY_CONFIG written as a TOML table in wrangler.toml reaches the Worker as an object, not
// JSON text (wrangler binds a non-string var as JSON). The Worker serves from it like from the
// text, and a bad table is a 503 config_invalid naming the field, never a 500.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import type { Env } from "../../src/env.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: "tbl", port: 0 }] });
});
afterAll(async () => {
  await cluster.close();
});

/** One request to a fresh app; the answer's status, error code and JSON body. */
async function call(env: Env, path: string, init?: RequestInit) {
  const ctx = createExecutionContext();
  const res = await createApp().fetch(new Request(`http://gateway.test${path}`, init), env, ctx);
  const body = (await res.json()) as Record<string, unknown>;
  await waitOnExecutionContext(ctx);
  return { status: res.status, code: res.headers.get("x-gateway-error-code"), body };
}

const table = () => ({
  auth: { data_plane: "open" },
  health: { disabled: true },
  models: { tbl: { regular: [{ name: "engine", url: cluster.url("engine"), transport: "openai-http" }] } },
});

it("serves from a table: /health ok and a completion through the engine", async () => {
  const env = { GATEWAY_CONFIG: table() } as Env;
  expect(await call(env, "/health")).toMatchObject({ status: 200, body: { status: "ok" } });
  const before = (await cluster.stats("engine")).generateRequests;
  const done = await call(env, "/v1/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "tbl", prompt: "hi", max_tokens: 2 }) });
  expect(done.status).toBe(200);
  expect(done.body.choices).toHaveLength(1);
  expect((await cluster.stats("engine")).generateRequests).toBe(before + 1);
});

it("a table with a typo is 503 config_invalid naming the field, on /health and on the data plane", async () => {
  const bad = table();
  (bad.models.tbl.regular[0] as Record<string, unknown>).transprot = "openai-http";
  const env = { GATEWAY_CONFIG: bad } as Env;
  const health = await call(env, "/health");
  expect(health).toMatchObject({ status: 503, code: "config_invalid", body: { status: "config_invalid" } });
  expect((health.body.errors as string[]).join("\n")).toMatch(/models\.tbl\.regular\.0: Unrecognized key: "transprot"/);
  const models = await call(env, "/v1/models");
  expect(models).toMatchObject({ status: 503, code: "config_invalid" });
  expect(JSON.stringify(models.body)).toMatch(/transprot/);
});
