// Builds the Hono app: the per-request gateway context first, then the surfaces.
import { Hono } from "hono";
import type { Env } from "./env.js";
import { ConfigError, loadConfig } from "./config/load.js";
import type { GatewayContext } from "./context.js";
import { createEventSink } from "./metrics/sink.js";
import { ENGINE_SERVICE_PATH, handleEngineRpc } from "./api/engine/router.js";

type AppEnv = { Bindings: Env; Variables: { gateway: GatewayContext } };

export function createApp() {
  const app = new Hono<AppEnv>();

  app.get("/health", (c) => c.json({ status: "ok" }));

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
    c.set("gateway", {
      config,
      events: createEventSink(c.env.METRICS),
      waitUntil: (p) => exec.waitUntil(p),
      clientSignal: c.req.raw.signal,
    });
    await next();
  });

  app.post(`${ENGINE_SERVICE_PATH}*`, (c) => handleEngineRpc(c.req.raw, c.get("gateway")));

  app.notFound((c) =>
    c.json({ error: { message: `no route for ${c.req.method} ${c.req.path}`, type: "not_found", param: null, code: "route_not_found" } }, 404),
  );
  return app;
}
