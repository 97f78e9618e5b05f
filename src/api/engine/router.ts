// The VllmEngine surface over Connect and gRPC-web on fetch (no native gRPC: Workers cannot
// send HTTP/2 trailers). One router per isolate; the per-request gateway context rides in
// Connect context values.
import { createConnectRouter, createContextValues } from "@connectrpc/connect";
import {
  universalServerRequestFromFetch,
  universalServerResponseToFetch,
  type UniversalHandler,
} from "@connectrpc/connect/protocol";
import { VllmEngine } from "../../gen/vllm_engine_pb.js";
import { gatewayContextKey, type GatewayContext } from "../../context.js";
import { engineService } from "./service.js";
import { checkProtoBody } from "./body-check.js";
import { reject } from "../../middleware/rejection.js";

export const ENGINE_SERVICE_PATH = `/${VllmEngine.typeName}/`;

let handlers: { maxBytes: number; byPath: Map<string, UniversalHandler> } | undefined;

function handlersFor(maxBytes: number) {
  if (!handlers || handlers.maxBytes !== maxBytes) {
    const router = createConnectRouter({ grpc: false, grpcWeb: true, connect: true, readMaxBytes: maxBytes });
    router.service(VllmEngine, engineService);
    handlers = { maxBytes, byPath: new Map(router.handlers.map((h) => [h.requestPath, h])) };
  }
  return handlers.byPath;
}

export async function handleEngineRpc(raw: Request, gw: GatewayContext): Promise<Response> {
  const handler = handlersFor(gw.config.limits.max_body_bytes).get(new URL(raw.url).pathname);
  if (!handler) return reject(raw, 404, "unknown_method", `${new URL(raw.url).pathname}: no such VllmEngine method`);
  const request = await checkProtoBody(raw, gw.config.limits.max_body_bytes);
  if (request instanceof Response) return request;
  const contextValues = createContextValues().set(gatewayContextKey, gw);
  const uReq = { ...universalServerRequestFromFetch(request, {}), contextValues };
  return universalServerResponseToFetch(await handler(uReq));
}
