// Registry poisoning (issue 15 item 5): engine names and models that are Object.prototype keys,
// or a stored row that does not parse, must never take routing or the admin API down, and
// DELETE must always be able to remove what is stored.
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { adminGateway, clearRegistry, deleteAlarm, registry, type AdminGateway } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generate, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      ...pairSpecs(),
      { name: "ctor", role: "decode", kvConnector: "none", model: "constructor", latency: FAST },
      { name: "tostr", role: "decode", kvConnector: "none", model: "toString", latency: FAST },
      { name: "d2", role: "decode", kvConnector: "NixlConnector", model: MODEL, latency: FAST },
    ],
  });
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await clearRegistry();
  await deleteAlarm();
});

const config = () => ({ ...pairConfig(cluster), registry: { allowed_hosts: ["127.0.0.1"], snapshot_ttl_ms: 0 } });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param: string | null; message: string } }).error;

/** Every surface still answers: the OpenAI model list, a Generate on the config model, the
 *  admin list, after a snapshot refresh has landed (ttl 0: every request starts one). */
async function expectRoutingAlive(gw: AdminGateway) {
  await gw.settle();
  await (await gw.fetch("http://gateway.test/v1/models")).body?.cancel(); // starts a snapshot refresh
  await gw.settle();
  const models = await gw.fetch("http://gateway.test/v1/models");
  expect(models.status).toBe(200);
  const out = await generate(gw, { requestId: `alive-${crypto.randomUUID()}`, input: { case: "text", value: "hello" } }, { headers: { "x-model": MODEL } });
  expect(out.error).toBeUndefined();
  expect((await gw.admin("GET", "/admin/engines")).status).toBe(200);
  return (await models.json()) as { data: { id: string }[] };
}

it("an engine whose model is `constructor` (or name `toString`) is routed like any other and deletes cleanly", async () => {
  const gw = adminGateway(config());
  const added = await gw.admin("POST", "/admin/engines", { name: "toString", model: "constructor", role: "regular", url: cluster.url("ctor") });
  expect(added.status).toBe(201);
  const other = await gw.admin("POST", "/admin/engines", { name: "valueOf", model: "toString", role: "regular", url: cluster.url("tostr") });
  expect(other.status).toBe(201);
  const listed = await expectRoutingAlive(gw);
  expect(listed.data.map((m) => m.id)).toEqual(expect.arrayContaining(["constructor", "toString", MODEL]));
  const viaRegistry = await generate(gw, { requestId: "ctor-1", input: { case: "text", value: "hello" } }, { headers: { "x-model": "constructor" } });
  expect(viaRegistry.error).toBeUndefined();
  expect((await cluster.stats("ctor")).generateRequests).toBe(1);

  expect((await gw.admin("DELETE", "/admin/engines/toString")).status).toBe(204);
  expect((await gw.admin("DELETE", "/admin/engines/valueOf")).status).toBe(204);
  await expectRoutingAlive(gw);
});

it("refuses names and models outside the documented pattern with 400 naming the field", async () => {
  const gw = adminGateway(config());
  for (const [field, value] of [["model", "__proto__"], ["name", "__proto__"], ["model", "a b"], ["model", ""], ["model", "x".repeat(129)], ["name", "a/b"]] as const) {
    const body = { name: "ok-name", model: MODEL, role: "decode", url: cluster.url("decode"), [field]: value };
    const res = await gw.admin("POST", "/admin/engines", body);
    expect(res.status, `${field}=${value}`).toBe(400);
    const err = await errorOf(res);
    expect(err.param).toBe(field);
    expect(err.message).toMatch(new RegExp(`^${field}: must`));
  }
  // HF-style model names (an org prefix with a slash) pass the rules (this engine then serves another model).
  const hf = await gw.admin("POST", "/admin/engines", { model: "Qwen/Qwen3-8B", role: "decode", url: cluster.url("d2") });
  expect((await errorOf(hf)).code).toBe("engine_model_mismatch");
  await expectRoutingAlive(gw);
});

it("a corrupt stored row is skipped with an error log, never takes routing down, and DELETE removes it", async () => {
  const gw = adminGateway(config());
  expect((await gw.admin("POST", "/admin/engines", { name: "good", model: MODEL, role: "decode", url: cluster.url("d2") })).status).toBe(201);
  await runInDurableObject(registry(), (_instance, state) => {
    const insert = `INSERT INTO engines (id, model, role, url, transport, status, overrides, labels, discovered, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
    const t = new Date().toISOString();
    state.storage.sql.exec(insert, "bad-json", MODEL, "decode", "http://127.0.0.1:1", "connect", "active", "{}", "{not json", "{}", t, t);
    state.storage.sql.exec(insert, "__proto__", "__proto__", "bogus", "http://127.0.0.1:2", "connect", "active", "{}", "{}", "{}", t, t);
    state.storage.sql.exec(insert, "bad-role", "hasOwnProperty", "leader", "http://127.0.0.1:3", "carrier-pigeon", "active", "{}", "{}", "{}", t, t);
  });
  await gw.settle();
  await abortAllDurableObjects(); // the object reloads its rows from SQLite

  const fresh = adminGateway(config());
  await expectRoutingAlive(fresh);
  const list = (await (await fresh.admin("GET", "/admin/engines")).json()) as { engines: { id: string }[] };
  expect(list.engines.map((e) => e.id)).toContain("good");
  expect(list.engines.map((e) => e.id)).not.toContain("bad-json");

  for (const id of ["bad-json", "__proto__", "bad-role", "good"]) {
    expect((await fresh.admin("DELETE", `/admin/engines/${encodeURIComponent(id)}`)).status, id).toBe(204);
  }
  const rows = await runInDurableObject(registry(), (_i, state) => state.storage.sql.exec("SELECT id FROM engines").toArray());
  expect(rows).toEqual([]);
  await expectRoutingAlive(fresh);
});

it("DELETE of an unknown engine answers 404, whatever the name", async () => {
  const gw = adminGateway(config());
  for (const id of ["nope", "constructor", "__proto__", "toString"]) {
    const res = await gw.admin("DELETE", `/admin/engines/${id}`);
    expect(res.status, id).toBe(404);
    expect((await errorOf(res)).code).toBe("engine_not_found");
  }
});
