// The engine registry admin API through the Worker, against the real registry Durable Object
// and sim engines: auth, validation, the URL allowlist, discovery, CRUD and persistence.
import { abortAllDurableObjects } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { adminGateway, clearRegistry, deleteAlarm, type AdminGateway } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST } from "../support/pd-fixtures.js";

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}
interface EngineBody {
  id: string;
  model: string;
  role: string;
  url: string;
  transport: string;
  status: string;
  labels: Record<string, string>;
  discovered: Record<string, unknown>;
  kv_connector?: string;
  health: unknown;
  breaker: unknown;
  created_at: string;
  updated_at: string;
}

let cluster: TestCluster;
let deadUrl: string;
beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      { name: "p", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p-eng", model: "m", latency: FAST },
      { name: "d", role: "decode", kvConnector: "MooncakeConnector", model: "m", latency: FAST },
      { name: "h", role: "decode", kvConnector: "NixlConnector", model: "m-http", latency: FAST },
    ],
  });
  // A URL nothing listens on: a cluster that has been closed.
  const dead = await startTestCluster({ engines: [{ name: "x", role: "decode", kvConnector: "none" }] });
  deadUrl = dead.url("x");
  await dead.close();
});
afterAll(async () => {
  await cluster.close();
});
afterEach(async () => {
  await clearRegistry();
  await deleteAlarm();
});

const config = (extra: Record<string, unknown> = {}) => ({
  models: { m: { prefill: [{ name: "cfg-p", url: cluster.url("p") }] } },
  registry: { allowed_hosts: ["127.0.0.1"] },
  ...extra,
});

const errorOf = async (res: Response) => ((await res.json()) as ErrorBody).error;

async function add(gw: AdminGateway, body: Record<string, unknown>): Promise<EngineBody> {
  const res = await gw.admin("POST", "/admin/engines", body);
  if (res.status !== 201) throw new Error(`add failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as EngineBody;
}

describe("auth", () => {
  it("is off (404 on every route) while ADMIN_TOKEN is not set, even with a token", async () => {
    const gw = adminGateway(config(), { adminToken: null });
    for (const [method, path] of [["GET", "/admin/engines"], ["POST", "/admin/engines"], ["GET", "/admin/engines/x"], ["DELETE", "/admin/engines/x"], ["POST", "/admin/engines/x/drain"]] as const) {
      const res = await gw.admin(method, path, method === "POST" ? {} : undefined, "t");
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await errorOf(res)).code).toBe("route_not_found");
    }
  });

  it("answers 401 with WWW-Authenticate for a missing, wrong or non-Bearer token", async () => {
    const gw = adminGateway(config());
    const missing = await gw.admin("GET", "/admin/engines", undefined, null);
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="vllm-edge-gateway admin"');
    expect(missing.headers.get("x-gateway-error-code")).toBe("admin_unauthorized");
    expect(await errorOf(missing)).toMatchObject({ type: "authentication_error", code: "admin_unauthorized" });

    const wrong = await gw.admin("GET", "/admin/engines", undefined, "not-it");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // A prefix of the right token is as wrong as any other.
    expect((await gw.admin("GET", "/admin/engines", undefined, "tt")).status).toBe(401);
    const basic = await gw.fetch("http://gateway.test/admin/engines", { headers: { authorization: "Basic dDp0" } });
    expect(basic.status).toBe(401);
    // Nothing was attempted: a POST without a token does not reach validation or discovery.
    expect((await gw.admin("POST", "/admin/engines", { url: deadUrl, model: "m", role: "decode" }, null)).status).toBe(401);

    const ok = await gw.admin("GET", "/admin/engines?source=registry");
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ engines: [], tokenizer_conflicts: [] });
  });

  it("answers 503 registry_not_configured when the REGISTRY binding is missing", async () => {
    const gw = adminGateway(config(), { registry: false });
    const res = await gw.admin("GET", "/admin/engines");
    expect(res.status).toBe(503);
    expect((await errorOf(res)).code).toBe("registry_not_configured");
  });
});

describe("validation", () => {
  it.each([
    [{ url: "http://127.0.0.1:1", role: "decode" }, "model", /model: Invalid input/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "leader" }, "role", /role: Invalid option/],
    [{ model: "m", role: "decode" }, "url", /url:/],
    [{ url: "not a url", model: "m", role: "decode" }, "url", /url: Invalid URL/],
    [{ url: "ftp://127.0.0.1:1", model: "m", role: "decode" }, "url", /url:/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "decode", transport: "grpc" }, "transport", /transport:/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "decode", dp_rank: -1 }, "dp_rank", /dp_rank:/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "decode", labels: { a: 1 } }, "labels.a", /labels\.a:/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "decode", name: "a/b" }, "name", /name: must be/],
    [{ url: "http://127.0.0.1:1", model: "m", role: "decode", bogus: true }, "bogus", /bogus: unknown field/],
  ])("rejects %j naming %s", async (body, param, message) => {
    const gw = adminGateway(config());
    const res = await gw.admin("POST", "/admin/engines", body);
    expect(res.status).toBe(400);
    expect(res.headers.get("x-gateway-error-code")).toBe("invalid_request");
    const err = await errorOf(res);
    expect(err.param).toBe(param);
    expect(err.message).toMatch(message);
    expect(err.type).toBe("invalid_request_error");
  });

  it("rejects a body that is not JSON, or not an object", async () => {
    const gw = adminGateway(config());
    const notJson = await gw.admin("POST", "/admin/engines", "{nope");
    expect(notJson.status).toBe(400);
    expect((await errorOf(notJson)).message).toMatch(/^body is not valid JSON/);
    const array = await gw.admin("POST", "/admin/engines", "[]");
    expect(array.status).toBe(400);
    expect((await errorOf(array)).message).toBe("body must be a JSON object");
  });

  it("refuses URLs with credentials or a query (400), and hosts outside the allowlist (403)", async () => {
    const gw = adminGateway(config());
    const creds = await gw.admin("POST", "/admin/engines", { url: "http://u:p@127.0.0.1:1", model: "m", role: "decode" });
    expect(creds.status).toBe(400);
    expect(await errorOf(creds)).toMatchObject({ code: "invalid_engine_url", param: "url", message: "url: must not contain credentials" });
    const query = await gw.admin("POST", "/admin/engines", { url: "http://127.0.0.1:1/?a=b", model: "m", role: "decode" });
    expect((await errorOf(query)).code).toBe("invalid_engine_url");

    const outside = await gw.admin("POST", "/admin/engines", { url: "http://10.1.2.3:8000", model: "m", role: "decode" });
    expect(outside.status).toBe(403);
    expect(outside.headers.get("x-gateway-error-code")).toBe("engine_url_not_allowed");
    expect(await errorOf(outside)).toMatchObject({ type: "permission_error", param: "url" });
    // localhost is another name, not the allowed address.
    expect((await gw.admin("POST", "/admin/engines", { url: "http://localhost:1", model: "m", role: "decode" })).status).toBe(403);

    const none = adminGateway(config({ registry: { allowed_hosts: [] } }));
    const refused = await none.admin("POST", "/admin/engines", { url: cluster.url("d"), model: "m", role: "decode" });
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toMatch(/allowed_hosts is empty/);
  });
});

describe("discovery", () => {
  it("refuses an engine it cannot reach with 502 engine_unreachable saying what failed", async () => {
    const gw = adminGateway(config());
    const grpc = await gw.admin("POST", "/admin/engines", { url: deadUrl, model: "m", role: "decode" });
    expect(grpc.status).toBe(502);
    expect(grpc.headers.get("x-gateway-error-code")).toBe("engine_unreachable");
    const grpcErr = await errorOf(grpc);
    expect(grpcErr.message).toMatch(new RegExp(`^engine ${deadUrl} is unreachable: (GetServerInfo|GetModelInfo) failed: `));
    expect(grpcErr.param).toBe("url");

    const http = await gw.admin("POST", "/admin/engines", { url: deadUrl, model: "m", role: "decode", transport: "openai-http" });
    expect(http.status).toBe(502);
    expect((await errorOf(http)).message).toMatch(/is unreachable: GET \/v1\/models failed: /);
    expect((await (await gw.admin("GET", "/admin/engines?source=registry")).json())).toMatchObject({ engines: [], tokenizer_conflicts: [] });
  });

  it("refuses an engine that serves another model (400 engine_model_mismatch)", async () => {
    const gw = adminGateway(config());
    const grpc = await gw.admin("POST", "/admin/engines", { url: cluster.url("d"), model: "other", role: "decode" });
    expect(grpc.status).toBe(400);
    expect(await errorOf(grpc)).toMatchObject({ code: "engine_model_mismatch", param: "model", message: 'model: the engine serves "m", not "other"' });
    const http = await gw.admin("POST", "/admin/engines", { url: cluster.url("h"), model: "m", role: "decode", transport: "openai-http" });
    expect(http.status).toBe(400);
    expect((await errorOf(http)).message).toBe('model: the engine serves "m-http", not "m"');
  });

  it("adds a reachable engine: 201 + Location, discovered metadata, listed and fetched", async () => {
    const gw = adminGateway(config());
    const res = await gw.admin("POST", "/admin/engines", { url: `${cluster.url("d")}/`, model: "m", role: "decode", labels: { zone: "a" } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as EngineBody;
    expect(res.headers.get("location")).toBe(`/admin/engines/${body.id}`);
    expect(body.id).toMatch(/^eng-[0-9a-f]{12}$/);
    expect(body).toMatchObject({
      model: "m",
      role: "decode",
      url: cluster.url("d"), // normalized: no trailing slash
      transport: "connect",
      status: "active",
      labels: { zone: "a" },
      health: null,
      breaker: null,
    });
    expect(body.discovered).toMatchObject({ kv_connector: "MooncakeConnector", kv_role: "kv_consumer", served_model_name: "m", dp_size: 1, max_context_length: 32768 });
    expect(body.kv_connector).toBeUndefined(); // discovered, not an override

    const http = await add(gw, { name: "http-1", url: cluster.url("h"), model: "m-http", role: "regular", transport: "openai-http", kv_connector: "NixlConnector" });
    expect(http).toMatchObject({ id: "http-1", kv_connector: "NixlConnector", discovered: { served_model_name: "m-http", max_context_length: 32768 } });

    const got = await gw.admin("GET", `/admin/engines/${body.id}`);
    expect(got.status).toBe(200);
    expect(((await got.json()) as EngineBody).discovered.kv_connector).toBe("MooncakeConnector");
    const all = (await (await gw.admin("GET", "/admin/engines?source=registry")).json()) as { engines: EngineBody[] };
    expect(all.engines.map((e) => e.id).sort()).toEqual([body.id, "http-1"].sort());
    const onlyHttp = (await (await gw.admin("GET", "/admin/engines?model=m-http")).json()) as { engines: EngineBody[] };
    expect(onlyHttp.engines.map((e) => e.id)).toEqual(["http-1"]);
    expect((await gw.admin("GET", "/admin/engines/nope")).status).toBe(404);
  });

  it("answers 409 for the same URL in the same pool, a taken name, or a config engine", async () => {
    const gw = adminGateway(config());
    await add(gw, { name: "d-1", url: cluster.url("d"), model: "m", role: "decode" });
    const dupUrl = await gw.admin("POST", "/admin/engines", { url: cluster.url("d"), model: "m", role: "decode" });
    expect(dupUrl.status).toBe(409);
    expect(await errorOf(dupUrl)).toMatchObject({ code: "engine_exists", param: "url" });
    const dupName = await gw.admin("POST", "/admin/engines", { name: "d-1", url: cluster.url("h"), model: "m", role: "regular" });
    expect(dupName.status).toBe(409);
    expect((await errorOf(dupName)).param).toBe("name");
    const cfgUrl = await gw.admin("POST", "/admin/engines", { url: cluster.url("p"), model: "m", role: "prefill" });
    expect(cfgUrl.status).toBe(409);
    expect((await errorOf(cfgUrl)).message).toMatch(/already a config engine of m\/prefill \("cfg-p"\)/);
    const cfgName = await gw.admin("POST", "/admin/engines", { name: "cfg-p", url: cluster.url("d"), model: "m", role: "regular" });
    expect(cfgName.status).toBe(409);
    // The same engine in another role of the model is a different pool entry.
    expect((await gw.admin("POST", "/admin/engines", { url: cluster.url("d"), model: "m", role: "regular" })).status).toBe(201);
  });
});

describe("update, drain, remove", () => {
  it("PUT replaces the engine (re-running discovery), and may bring a drained engine back", async () => {
    const gw = adminGateway(config());
    const e = await add(gw, { name: "d-put", url: cluster.url("d"), model: "m", role: "decode", labels: { a: "1" } });
    const put = await gw.admin("PUT", "/admin/engines/d-put", { url: cluster.url("d"), model: "m", role: "decode", labels: { b: "2" }, kv_connector: "NixlConnector" });
    expect(put.status).toBe(200);
    const updated = (await put.json()) as EngineBody;
    expect(updated).toMatchObject({ id: "d-put", labels: { b: "2" }, kv_connector: "NixlConnector", status: "active", created_at: e.created_at });

    const mismatch = await gw.admin("PUT", "/admin/engines/d-put", { url: cluster.url("d"), model: "other", role: "decode" });
    expect((await errorOf(mismatch)).code).toBe("engine_model_mismatch");
    const rename = await gw.admin("PUT", "/admin/engines/d-put", { name: "x", url: cluster.url("d"), model: "m", role: "decode" });
    expect(rename.status).toBe(400);
    expect((await errorOf(rename)).param).toBe("name");
    expect((await gw.admin("PUT", "/admin/engines/ghost", { url: cluster.url("d"), model: "m", role: "decode" })).status).toBe(404);

    const drained = await gw.admin("POST", "/admin/engines/d-put/drain");
    expect(drained.status).toBe(200);
    expect(((await drained.json()) as EngineBody).status).toBe("draining");
    // Draining twice is fine.
    expect((await gw.admin("POST", "/admin/engines/d-put/drain")).status).toBe(200);
    const back = await gw.admin("PUT", "/admin/engines/d-put", { url: cluster.url("d"), model: "m", role: "decode", status: "active" });
    expect(((await back.json()) as EngineBody).status).toBe("active");
  });

  it("DELETE removes the engine (204), then it is gone (404)", async () => {
    const gw = adminGateway(config());
    await add(gw, { name: "d-del", url: cluster.url("d"), model: "m", role: "decode" });
    const del = await gw.admin("DELETE", "/admin/engines/d-del");
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    expect((await gw.admin("GET", "/admin/engines/d-del")).status).toBe(404);
    const again = await gw.admin("DELETE", "/admin/engines/d-del");
    expect(again.status).toBe(404);
    expect((await errorOf(again)).code).toBe("engine_not_found");
    expect((await gw.admin("POST", "/admin/engines/d-del/drain")).status).toBe(404);
  });
});

describe("persistence", () => {
  it("keeps registered engines across a restart of the object and a fresh gateway", async () => {
    const first = adminGateway(config());
    await add(first, { name: "kept", url: cluster.url("d"), model: "m", role: "decode", labels: { k: "v" } });
    await first.admin("POST", "/admin/engines/kept/drain");
    // Drop every Durable Object instance (storage stays): the next call builds the object
    // again from SQLite, as after an eviction or a deploy.
    await abortAllDurableObjects();
    const second = adminGateway(config());
    const res = await second.admin("GET", "/admin/engines/kept");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "kept", status: "draining", labels: { k: "v" }, discovered: { kv_connector: "MooncakeConnector" } });
  });
});
