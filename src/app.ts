// Builds the Hono app: the per-request gateway context first, then CORS, limits, data-plane
// auth and rate limiting, then the surfaces. All middleware is composed here.
import { Hono } from "hono";
import type { Env } from "./env.js";
import { ConfigError, loadConfig, type LoadedConfig } from "./config/load.js";
import type { GatewayContext } from "./context.js";
import { createEventSink } from "./metrics/sink.js";
import { mountDevMetrics } from "./metrics/dev-route.js";
import { breakerRecordingSink } from "./routing/outcomes.js";
import { reportOutcome, routingSnapshot } from "./routing/snapshot.js";
import { ENGINE_SERVICE_PATH, handleEngineRpc } from "./api/engine/router.js";
import { openaiRoutes } from "./api/openai/routes.js";
import { adminRoutes } from "./api/admin/routes.js";
import { corsFromConfig } from "./middleware/cors.js";
import { requestLimits } from "./middleware/limits.js";
import { dataPlaneAuth } from "./middleware/auth.js";
import { rateLimit } from "./middleware/rate-limit.js";

type AppEnv = { Bindings: Env; Variables: { gateway: GatewayContext; apiKey?: string } };

/** Metrics sink for one request: engine outcomes feed this isolate's circuit breakers and the
 *  registry's shared ones, and breaker transitions are recorded as events. */
function requestSink(env: Env, config: LoadedConfig, waitUntil: (p: Promise<unknown>) => void) {
  const sink = createEventSink(env.METRICS);
  return breakerRecordingSink(
    sink,
    config.breaker,
    (engine, model, t) => sink.emit({ type: "breaker_transition", model, engine, from: t.from, to: t.to }),
    (engine, status) => reportOutcome(env, { engine, status }, { config, waitUntil }),
  );
}

export function createApp() {
  const app = new Hono<AppEnv>();

  app.get("/health", (c) => c.json({ status: "ok" }));
  mountDevMetrics(app); // dev only (DEV_METRICS=on): GET /admin/metrics/recent, points teed into a ring

  app.use("*", async (c, next) => {
    let config;
    try {
      config = loadConfig(c.env.GATEWAY_CONFIG);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      console.error(JSON.stringify({ msg: "invalid gateway config", error: err.message }));
      return c.json({ error: { message: err.message, type: "config_error", param: null, code: "config_invalid" } }, 503, {
        "x-gateway-error-code": "config_invalid",
      });
    }
    const exec = c.executionCtx;
    const waitUntil = (p: Promise<unknown>) => exec.waitUntil(p);
    c.set("gateway", {
      config,
      routing: routingSnapshot(c.env, config, waitUntil),
      events: requestSink(c.env, config, waitUntil),
      waitUntil,
      clientSignal: c.req.raw.signal,
    });
    await next();
  });
  app.use("*", corsFromConfig());
  app.use("*", requestLimits());
  for (const dataPlane of ["/v1/*", `${ENGINE_SERVICE_PATH}*`]) {
    app.use(dataPlane, dataPlaneAuth());
    app.use(dataPlane, rateLimit());
  }

  app.post(`${ENGINE_SERVICE_PATH}*`, (c) => handleEngineRpc(c.req.raw, c.get("gateway")));
  app.route("/v1", openaiRoutes());
  app.route("/admin", adminRoutes());

  app.notFound((c) =>
    c.json({ error: { message: `no route for ${c.req.method} ${c.req.path}`, type: "not_found", param: null, code: "route_not_found" } }, 404),
  );
  return app;
}
