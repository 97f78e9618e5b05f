// The VllmEngine service the gateway serves to clients: Generate runs through the one
// pipeline; Abort reaches the legs of the caller's own requests; the info RPCs proxy to a
// decode engine; HealthCheck answers for the gateway.
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { VllmEngine } from "../../gen/vllm_engine_pb.js";
import type { EngineConfig } from "../../config/schema.js";
import { GatewayError } from "../../core/errors.js";
import { noEngineError } from "../../routing/pipeline.js";
import { VLLM_ENGINE_TRANSPORTS } from "../../routing/families.js";
import { abort } from "./abort.js";
import { gatewayOf, modelOf } from "./gateway-of.js";
import { generate } from "./generate.js";
import { checkEngineHealth } from "./health.js";

/** The engine that answers info RPCs for a model: a decode engine, or a regular one. */
function infoEngine(ctx: HandlerContext): EngineConfig {
  const gw = gatewayOf(ctx);
  const model = modelOf(gw, ctx);
  const pools = Object.hasOwn(gw.routing.models, model) ? gw.routing.models[model] : undefined;
  const engine = [...(pools?.decode ?? []), ...(pools?.regular ?? [])].find((e) => VLLM_ENGINE_TRANSPORTS.has(e.transport));
  if (engine) return engine;
  const e = noEngineError(gw, model);
  throw new GatewayError(e.code, e.status, e.message, e.status === 404 ? Code.NotFound : Code.Unavailable, "x-model");
}

function proxied<K extends "getModelInfo" | "getServerInfo" | "getLoads">(method: K) {
  return async (req: Parameters<ServiceImpl<typeof VllmEngine>[K]>[0], ctx: HandlerContext) => {
    const client = gatewayOf(ctx).isolate.engines.vllmEngine(infoEngine(ctx));
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (client[method] as any)(req, { signal: ctx.signal, timeoutMs: 10_000 });
  };
}

export const engineService: Partial<ServiceImpl<typeof VllmEngine>> = {
  generate,
  abort,
  healthCheck: async (_req, ctx) => checkEngineHealth(gatewayOf(ctx), VLLM_ENGINE_TRANSPORTS),
  getModelInfo: proxied("getModelInfo"),
  getServerInfo: proxied("getServerInfo"),
  getLoads: proxied("getLoads"),
};
