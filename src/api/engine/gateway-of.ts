// The gateway context a Connect handler runs in, and the model a call is for.
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { gatewayContextKey, routedConfig, type GatewayContext } from "../../context.js";
import { GatewayError } from "../../core/errors.js";
import { defaultModel } from "../../routing/select.js";
import { VLLM_ENGINE_TRANSPORTS } from "../../routing/families.js";

export function gatewayOf(ctx: HandlerContext): GatewayContext {
  const gw = ctx.values.get(gatewayContextKey);
  if (!gw) throw new ConnectError("gateway context missing", Code.Internal);
  return gw;
}

/** The `x-model` header, or the only model VllmEngine engines serve. */
export function modelOf(gw: GatewayContext, ctx: HandlerContext): string {
  const named = ctx.requestHeader.get("x-model");
  if (named) return named;
  const model = defaultModel(routedConfig(gw), VLLM_ENGINE_TRANSPORTS);
  if (!model) {
    throw new GatewayError("model_required", 400, "x-model: header required, more than one model is configured", Code.InvalidArgument, "x-model");
  }
  return model;
}
