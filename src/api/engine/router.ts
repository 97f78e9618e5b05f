// The VllmEngine surface over Connect and gRPC-web on fetch (no native gRPC: Workers cannot
// send HTTP/2 trailers). One router per isolate; the per-request gateway context rides in
// Connect context values. Before Connect sees a request the gateway answers, in the caller's
// protocol, what connect-es would answer badly: a content type the method does not take (415
// with the accepted ones listed, where connect-es sends an empty body) and a body that is not
// what its content type says (body-check.ts).
import { createConnectRouter, createContextValues } from "@connectrpc/connect";
import {
  createAsyncIterable,
  universalServerRequestFromFetch,
  universalServerResponseToFetch,
  type UniversalHandler,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import type { DescMethod } from "@bufbuild/protobuf";
import { VllmEngine, type GenerateRequest } from "../../gen/vllm_engine_pb.js";
import { gatewayContextKey, type GatewayContext } from "../../context.js";
import { engineService } from "./service.js";
import { gatewayErrorInterceptor } from "./errors.js";
import { checkProtoBody, type CheckedBody } from "./body-check.js";
import { gzip } from "./compression.js";
import { acceptedContentTypes, wireFormatOf, type WireFormat } from "./content-types.js";
import { keepaliveFrame } from "./keepalive.js";
import { HeadLatch, headLatchKey, respondEarly } from "./early-head.js";
import { reject } from "../../errors/render.js";
import { rawRelayProtocol } from "./raw-eligible.js";
import { RawHandover, rawHandoverKey } from "./raw-handover.js";
import { directGenerate } from "./direct-generate.js";

export const ENGINE_SERVICE_PATH = `/${VllmEngine.typeName}/`;

const methodsByPath = new Map<string, DescMethod>(VllmEngine.methods.map((m) => [`${ENGINE_SERVICE_PATH}${m.name}`, m]));

// Module-level: the handlers are built from the (stateless) service and the body limit only,
// and rebuilt when that limit changes; request state comes in each call's context values.
let handlers: { maxBytes: number; byPath: Map<string, UniversalHandler> } | undefined;

function handlersFor(maxBytes: number) {
  if (!handlers || handlers.maxBytes !== maxBytes) {
    const router = createConnectRouter({ grpc: false, grpcWeb: true, connect: true, readMaxBytes: maxBytes, acceptCompression: [gzip] });
    router.service(VllmEngine, engineService, { interceptors: [gatewayErrorInterceptor] });
    handlers = { maxBytes, byPath: new Map(router.handlers.map((h) => [h.requestPath, h])) };
  }
  return handlers.byPath;
}

export async function handleEngineRpc(raw: Request, gw: GatewayContext): Promise<Response> {
  const path = new URL(raw.url).pathname;
  const handler = handlersFor(gw.config.limits.max_body_bytes).get(path);
  const method = methodsByPath.get(path);
  if (!handler || !method) return reject(raw, 404, "unknown_method", `${path}: no such VllmEngine method`);
  const contentType = raw.headers.get("content-type");
  const format = wireFormatOf(contentType, method);
  if (!format) {
    const kind = method.methodKind === "unary" ? "a unary method" : "a server-streaming method";
    const given = contentType === null ? "no content-type" : `content-type "${contentType}"`;
    return reject(raw, 415, "unsupported_content_type", `content-type: ${method.name} is ${kind}; it takes ${acceptedContentTypes(method).join(", ")}, not ${given}`);
  }
  // An Abort over the key's limit is turned away before its body is read: an Abort flood
  // should cost as little as possible of what other tenants need.
  const releaseAbort = method === ABORT ? takeAbortSlot(gw) : undefined;
  if (releaseAbort === null) return reject(raw, 429, "abort_rate_limited", abortLimitMessage(gw));
  try {
    const body = await checkProtoBody(raw, method, format, gw.config.limits.max_body_bytes);
    if (body instanceof Response) return body;
    if (method.methodKind === "server_streaming") return streamingCall(raw, body, handler, gw, format, method);
    const contextValues = createContextValues().set(gatewayContextKey, gw);
    const uReq = { ...universalRequest(raw, body), contextValues };
    return alreadyEncoded(universalServerResponseToFetch(await handler(uReq)));
  } finally {
    releaseAbort?.();
  }
}

const ABORT = VllmEngine.method.abort;

/** One of the caller's Abort slots (limits.max_concurrent_aborts_per_key), or null. */
function takeAbortSlot(gw: GatewayContext): (() => void) | null {
  return gw.isolate.clientRequests.takeAbortSlot(gw.owner, gw.config.limits.max_concurrent_aborts_per_key) ?? null;
}

function abortLimitMessage(gw: GatewayContext): string {
  return `Abort: at most ${gw.config.limits.max_concurrent_aborts_per_key} calls in flight per API key; retry when one has answered`;
}

/** A server-streaming call: its head goes out once the handler opens the latch (early-head.ts),
 *  keepalive frames follow until the first message when configured, and a cancelled body is a
 *  client that left, like request.signal firing. A Generate whose wire format allows it gets a
 *  handover for the raw frame relay (raw-eligible.ts, raw-relay.ts). */
async function streamingCall(request: Request, body: CheckedBody, handler: UniversalHandler, gw: GatewayContext, format: WireFormat, method: DescMethod): Promise<Response> {
  const latch = new HeadLatch();
  const bodyCancelled = new AbortController();
  const clientSignal = AbortSignal.any([gw.clientSignal, bodyCancelled.signal]);
  const call: GatewayContext = { ...gw, clientSignal, pipeline: (model) => ({ ...gw.pipeline(model), clientSignal }) };
  const contextValues = createContextValues().set(gatewayContextKey, call).set(headLatchKey, latch);
  const everyMs = gw.config.pd.stream_keepalive_ms;
  const keepalive = everyMs > 0 ? { frame: keepaliveFrame(format), everyMs } : undefined;
  const onCancel = (reason: unknown) => bodyCancelled.abort(reason);
  const rawProtocol = method === GENERATE ? rawRelayProtocol(format, request.headers) : undefined;
  const handover = rawProtocol ? new RawHandover(rawProtocol) : undefined;
  if (handover) contextValues.set(rawHandoverKey, handover);
  // The raw relay's form, decoded already: served without connect-es's pipeline.
  const responding =
    rawProtocol && body.message
      ? directGenerate(rawProtocol, request, body.message as GenerateRequest, contextValues)
      : handler({ ...universalRequest(request, body), contextValues });
  return respondEarly(responding, latch, onCancel, keepalive, handover, gw.waitUntil);
}

const GENERATE = VllmEngine.method.generate;

/** The request as Connect takes it, with the body's bytes when they were read and checked. */
function universalRequest(request: Request, body: CheckedBody): UniversalServerRequest {
  const bytes = body.bytes;
  if (!bytes) return universalServerRequestFromFetch(request, {});
  return { httpVersion: "", method: request.method, url: request.url, header: request.headers, body: createAsyncIterable([bytes]), signal: request.signal };
}

/** A unary Connect response compressed by Connect carries `content-encoding: gzip`; workerd
 *  would compress such a body again unless told it already is. */
function alreadyEncoded(res: Response): Response {
  if (!res.headers.has("content-encoding")) return res;
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers, encodeBody: "manual" });
}
