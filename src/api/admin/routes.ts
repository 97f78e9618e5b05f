// The engine registry admin API, mounted under /admin by app.ts (which has already loaded the
// config). Off unless the ADMIN_TOKEN secret is set: without it every /admin path answers the
// gateway's plain 404, so an unconfigured deployment is closed, never open. Reference:
// docs/admin.md.
import { Hono, type Context, type MiddlewareHandler } from "hono";
import type { Env } from "../../env.js";
import type { GatewayContext } from "../../context.js";
import { GatewayError } from "../../core/errors.js";
import { registryStub, type RegistryStub } from "../../routing/registry-client.js";
import { ENGINE_ROLES, type RegistryConfig, type RegistryWriteResult } from "../../routing/registry-types.js";
import type { EngineConfig } from "../../config/schema.js";
import type { LoadedConfig } from "../../config/load.js";
import { readBodyText } from "../../core/body-text.js";
import { renderError, toGatewayError } from "../../errors/render.js";
import { bearerToken, tokenMatches } from "./auth.js";
import { ENGINE_ID_PATTERN, parseBody, registerBodySchema, updateBodySchema } from "./bodies.js";
import { newEngineId, prepareEngine } from "./register.js";
import { configEngineView, engineView, type IsolateView } from "./view.js";
import { clustersView } from "./clusters-view.js";
import { parsersView } from "./parsers-view.js";

type AdminEnv = { Bindings: Env; Variables: { gateway: GatewayContext; registry: RegistryStub } };
type AdminContext = Context<AdminEnv>;

/** Admin bodies are a few hundred bytes; anything near this is not an engine. */
const MAX_BODY_BYTES = 64 * 1024;

const gate: MiddlewareHandler<AdminEnv> = async (c, next) => {
  const expected = c.env.ADMIN_TOKEN;
  if (!expected) return renderError(c.req.raw, new GatewayError("route_not_found", 404, `no route for ${c.req.method} ${c.req.path}`));
  const given = bearerToken(c.req.header("authorization"));
  if (given === undefined || !(await tokenMatches(given, expected))) {
    const challenge = given === undefined ? 'Bearer realm="vllm-edge-gateway admin"' : 'Bearer realm="vllm-edge-gateway admin", error="invalid_token"';
    const message = given === undefined ? "the admin API needs Authorization: Bearer <ADMIN_TOKEN>" : "the admin token is not valid";
    return renderError(c.req.raw, new GatewayError("admin_unauthorized", 401, message), { "www-authenticate": challenge });
  }
  if (!c.env.REGISTRY) {
    return renderError(c.req.raw, new GatewayError("registry_not_configured", 503, "this deployment has no REGISTRY Durable Object binding"));
  }
  c.set("registry", registryStub(c.env.REGISTRY));
  await next();
};

/** Every failure leaves as the JSON error shape; nothing here answers a bare 500. */
function handle(fn: (c: AdminContext) => Promise<Response>) {
  return async (c: AdminContext) => {
    try {
      return await fn(c);
    } catch (err) {
      return renderError(c.req.raw, toGatewayError(err, "admin API"));
    }
  };
}

function engineId(c: AdminContext): string {
  const id = c.req.param("id") ?? "";
  if (!ENGINE_ID_PATTERN.test(id)) throw notFound(id);
  return id;
}

/** DELETE takes any id the store might hold (rows written before the name rules, or damaged
 *  ones), so a bad entry can always be removed; only the length is bounded. */
function anyEngineId(c: AdminContext): string {
  const id = c.req.param("id") ?? "";
  if (id.length === 0 || id.length > 1024) throw notFound(id);
  return id;
}

const notFound = (id: string) => new GatewayError("engine_not_found", 404, `no registry engine "${id}"`);

/** Only what the object needs: the whole config would cross the RPC boundary for nothing. */
const registryConfigOf = (c: LoadedConfig): RegistryConfig => ({ models: c.models, health: c.health, breaker: c.breaker });

/** This isolate's own view of an engine: the isolate answering this admin request, one of
 *  many in a deployment. */
const isolateOf = (gw: GatewayContext): IsolateView => ({
  breaker: (name) => gw.isolate.breakers.state(name),
  inFlight: (name) => gw.isolate.loads.load(name),
});

/** Every engine entry of the config, per model and role (`model` keeps one model's). */
function configEngines(models: LoadedConfig["models"], model: string | undefined) {
  const out: { model: string; role: (typeof ENGINE_ROLES)[number]; engine: EngineConfig }[] = [];
  for (const [name, pools] of Object.entries(models)) {
    if (model !== undefined && name !== model) continue;
    for (const role of ENGINE_ROLES) for (const engine of pools[role]) out.push({ model: name, role, engine });
  }
  return out;
}

function written(r: RegistryWriteResult) {
  if (r.ok) return r.engine;
  throw new GatewayError(r.code, r.code === "engine_not_found" ? 404 : 409, r.message);
}

async function viewOf(c: AdminContext, id: string) {
  const s = await c.get("registry").get(id);
  if (!s) throw notFound(id);
  return engineView(s, c.get("gateway").config.breaker, isolateOf(c.get("gateway")));
}

export function adminRoutes() {
  const r = new Hono<AdminEnv>();
  r.use("*", gate);

  r.get(
    "/engines",
    handle(async (c) => {
      const model = c.req.query("model") || undefined;
      const source = c.req.query("source") || undefined;
      if (source !== undefined && source !== "config" && source !== "registry") {
        throw new GatewayError("invalid_request", 400, 'source: must be "config" or "registry"', undefined, "source");
      }
      const gw = c.get("gateway");
      const stub = c.get("registry");
      const isolate = isolateOf(gw);
      const engines: unknown[] = [];
      if (source !== "registry") {
        const entries = configEngines(gw.config.models, model);
        const shared = new Map((await stub.sharedState([...new Set(entries.map((x) => x.engine.name))])).map((s) => [s.name, s]));
        for (const x of entries) engines.push(configEngineView(x.model, x.role, x.engine, shared.get(x.engine.name) ?? {}, gw.config.breaker, isolate));
      }
      if (source !== "config") {
        for (const s of await stub.list(model)) engines.push(engineView(s, gw.config.breaker, isolate));
      }
      // Engines of one model that serve different tokenizer bundles (seen by this isolate):
      // a config error, since the gateway tokenizes once for all of them.
      const tokenizerConflicts = (gw.isolate.tokenizers?.conflicts() ?? []).filter((x) => model === undefined || x.model === model);
      return c.json({ engines, clusters: clustersView(gw, model), parsers: parsersView(gw, model), tokenizer_conflicts: tokenizerConflicts });
    }),
  );

  r.get("/engines/:id", handle(async (c) => c.json(await viewOf(c, engineId(c)))));

  r.post(
    "/engines",
    handle(async (c) => {
      const body = parseBody(registerBodySchema, await readBodyText(c.req.raw, MAX_BODY_BYTES));
      const stub = c.get("registry");
      const id = body.name ?? newEngineId();
      const { config, isolate } = c.get("gateway");
      const engine = written(await stub.add(await prepareEngine(body, config, stub, id, false, isolate.engines), registryConfigOf(config)));
      const location = `/admin/engines/${encodeURIComponent(engine.id)}`;
      return c.json(await viewOf(c, engine.id), 201, { location });
    }),
  );

  r.put(
    "/engines/:id",
    handle(async (c) => {
      const id = engineId(c);
      const body = parseBody(updateBodySchema, await readBodyText(c.req.raw, MAX_BODY_BYTES));
      if (body.name !== undefined && body.name !== id) {
        throw new GatewayError("invalid_request", 400, `name: "${body.name}" does not match the engine id "${id}" in the path`, undefined, "name");
      }
      const stub = c.get("registry");
      if (!(await stub.get(id))) throw notFound(id);
      const { config, isolate } = c.get("gateway");
      const prepared = await prepareEngine(body, config, stub, id, true, isolate.engines);
      written(await stub.update(id, body.status === undefined ? prepared : { ...prepared, status: body.status }, registryConfigOf(config)));
      return c.json(await viewOf(c, id));
    }),
  );

  r.post(
    "/engines/:id/drain",
    handle(async (c) => {
      const id = engineId(c);
      written(await c.get("registry").drain(id));
      return c.json(await viewOf(c, id));
    }),
  );

  r.delete(
    "/engines/:id",
    handle(async (c) => {
      const id = anyEngineId(c);
      if (!(await c.get("registry").remove(id))) throw notFound(id);
      return c.body(null, 204);
    }),
  );

  return r;
}
