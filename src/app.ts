// Builds the Hono app: the per-request gateway context first, then CORS, limits, data-plane
// auth and rate limiting, then the surfaces. All middleware is composed here, once; each app
// owns its isolate state (a test builds a fresh app instead of resetting module state).
import { Hono, type Context } from "hono";
import type { Env } from "./env.js";
import { ConfigError, loadConfig, type LoadedConfig } from "./config/load.js";
import type { GatewayContext } from "./context.js";
import { createEventSink } from "./metrics/sink.js";
import type { EventSink } from "./metrics/events.js";
import { mountDevMetrics } from "./api/admin/dev-metrics.js";
import { createIsolateState, type IsolateState } from "./routing/isolate.js";
import { outcomeReporter } from "./routing/outcomes.js";
import { OPEN_OWNER } from "./routing/client-requests.js";
import type { PipelineContext } from "./routing/pipeline.js";
import { clientLocation, type GeoPoint } from "./routing/geo.js";
import { openaiRoutes } from "./api/openai/routes.js";
import { anthropicRoutes } from "./api/anthropic/routes.js";
import { openAiChatPath } from "./api/openai/chat-path.js";
import { corsFromConfig } from "./middleware/cors.js";
import { requestLimits } from "./middleware/limits.js";
import { dataPlaneAuth } from "./middleware/auth.js";
import { rateLimit } from "./middleware/rate-limit.js";
import { hasFetchBinding, type Bindings } from "./backends/fetch.js";
import { ResponseStoreClient } from "./conversations/response-store-client.js";
import { renderError, toGatewayError } from "./errors/render.js";
import { GatewayError } from "./core/errors.js";

/** The VllmEngine surface's path prefix (`/${VllmEngine.typeName}/`, checked by a unit test).
 *  Spelled out so the surface - Connect, its router and the generated descriptors - is
 *  imported on its first request, not at the isolate's start-up. */
export const ENGINE_SERVICE_PATH = "/vllm.grpc.engine.VllmEngine/";
let engineRouter: Promise<typeof import("./api/engine/router.js")> | undefined;
const loadEngineRouter = () => (engineRouter ??= import("./api/engine/router.js"));

type AppEnv = { Bindings: Env; Variables: { gateway: GatewayContext; apiKey?: string } };

interface RequestScope {
  env: Env;
  config: LoadedConfig;
  isolate: IsolateState;
  events: EventSink;
  clientSignal: AbortSignal;
  waitUntil(p: Promise<unknown>): void;
  request: Request;
}

/** The pipeline's context for one request to `model`: engine outcomes feed this isolate's
 *  breakers, the registry's shared ones, and the metrics. */
function pipelineContext(s: RequestScope, gw: () => GatewayContext, model: string): PipelineContext {
  let location: { point: GeoPoint | undefined } | undefined;
  return {
    config: s.config,
    routing: gw().routing,
    isolate: s.isolate,
    events: s.events,
    clientSignal: s.clientSignal,
    waitUntil: s.waitUntil,
    // Read once, on the first attempt that has a cluster to choose; retries reuse it.
    client: () => (location ??= { point: clientLocation(s.config.geo.header, s.request.headers, (s.request as { cf?: unknown }).cf) }).point,
    outcomes: outcomeReporter({
      model,
      events: s.events,
      breakers: s.isolate.breakers,
      settings: s.config.breaker,
      capacityStatusCodes: s.config.retry.capacity_status_codes,
      share: (engine, status) => s.isolate.registry.reportOutcome(s.env, { engine, status }, { config: s.config, waitUntil: s.waitUntil }),
    }),
  };
}

/** Config engines that name a binding this Worker does not have (wrangler.toml vpc_services). */
function missingBindings(config: LoadedConfig, env: object): string[] {
  const out: string[] = [];
  for (const [model, pools] of Object.entries(config.models)) {
    for (const role of ["prefill", "decode", "encode", "regular"] as const) {
      pools[role].forEach((e, i) => {
        if (e.binding !== undefined && !hasFetchBinding(env as Bindings, e.binding)) {
          out.push(`models.${model}.${role}.${i}.binding: the Worker has no binding ${e.binding} (declare it in wrangler.toml vpc_services)`);
        }
      });
    }
  }
  return out;
}

/** An unknown path, in the caller's protocol: OpenAI's 404, or Connect's unknown procedure. */
const routeNotFound = (c: Context) => renderError(c.req.raw, new GatewayError("route_not_found", 404, `no route for ${c.req.method} ${c.req.path}`));

export function createApp(isolate: IsolateState = createIsolateState()) {
  const app = new Hono<AppEnv>();

  // Healthy only with a config it can serve: a broken GATEWAY_CONFIG shows here at once
  // (and `npm start` stops on it) instead of on the first real request.
  app.get("/health", (c) => {
    let errors: readonly string[];
    try {
      errors = missingBindings(loadConfig(c.env.GATEWAY_CONFIG), c.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors = err.problems;
    }
    if (errors.length > 0) return c.json({ status: "config_invalid", errors }, 503, { "x-gateway-error-code": "config_invalid" });
    return c.json({ status: "ok" });
  });
  mountDevMetrics(app, isolate); // dev only (DEV_METRICS=on): GET /admin/metrics/recent, points teed into a ring

  app.use("*", async (c, next) => {
    const arrivedAt = Date.now();
    let config;
    try {
      config = loadConfig(c.env.GATEWAY_CONFIG);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      console.error(JSON.stringify({ msg: "invalid gateway config", error: err.message }));
      return renderError(c.req.raw, new GatewayError("config_invalid", 503, err.message));
    }
    isolate.engines.useBindings(c.env);
    const exec = c.executionCtx;
    const waitUntil = (p: Promise<unknown>) => exec.waitUntil(p);
    const scope: RequestScope = { env: c.env, config, isolate, events: createEventSink(c.env.METRICS, { counters: isolate.metrics.counters }), clientSignal: c.req.raw.signal, waitUntil, request: c.req.raw };
    const gateway: GatewayContext = {
      arrivedAt,
      config,
      routing: isolate.registry.snapshot(c.env, config, waitUntil),
      isolate,
      events: scope.events,
      waitUntil,
      clientSignal: scope.clientSignal,
      owner: OPEN_OWNER,
      responseStore: c.env.RESPONSES ? new ResponseStoreClient(c.env.RESPONSES) : undefined,
      pipeline: (model) => pipelineContext(scope, () => gateway, model),
    };
    c.set("gateway", gateway);
    await next();
  });
  app.use("*", corsFromConfig());
  app.use("*", requestLimits());
  for (const dataPlane of ["/v1/*", `${ENGINE_SERVICE_PATH}*`]) {
    app.use(dataPlane, dataPlaneAuth());
    app.use(dataPlane, rateLimit());
  }

  app.post(`${ENGINE_SERVICE_PATH}*`, async (c) => (await loadEngineRouter()).handleEngineRpc(c.req.raw, c.get("gateway")));
  app.route("/v1", openaiRoutes());
  app.route("/v1", anthropicRoutes(openAiChatPath));
  // The admin API (and the zod schemas of its bodies) loads on its first request: its own
  // Hono app, handed this request's gateway context.
  const gatewayOf = new WeakMap<Request, GatewayContext>();
  let admin: Promise<Hono<AppEnv>> | undefined;
  const loadAdmin = () =>
    (admin ??= import("./api/admin/routes.js").then(({ adminRoutes }) => {
      const sub = new Hono<AppEnv>();
      sub.use("*", async (c, next) => {
        c.set("gateway", gatewayOf.get(c.req.raw)!);
        await next();
      });
      sub.route("/admin", adminRoutes());
      sub.notFound(routeNotFound);
      return sub;
    }));
  app.all("/admin/*", async (c) => {
    const sub = await loadAdmin();
    gatewayOf.set(c.req.raw, c.get("gateway"));
    return sub.fetch(c.req.raw, c.env, c.executionCtx);
  });

  app.notFound(routeNotFound);
  // The one place an error no handler answered becomes a response, in the caller's protocol:
  // a GatewayError keeps its status, code and param; anything else is a bug, logged and
  // answered 500 without internals.
  app.onError((err, c) => renderError(c.req.raw, toGatewayError(err, `unhandled, ${c.req.method} ${c.req.path}`)));
  return app;
}
