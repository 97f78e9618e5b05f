// A streamed Generate in Connect's or gRPC-web's binary, uncompressed form with no deadline
// (the form the raw relay takes, raw-eligible.ts) is served by the Generate implementation
// directly, without connect-es's handler pipeline: its request body was already read, split
// and decoded by body-check.ts, and what the handler writes before a raw handover is a few
// messages and the end-of-stream message. connect-es's pipeline (body iterables, envelope
// transforms, interceptor and invoker wrappers) was most of the fixed CPU a short Generate
// cost over a pass-through (docs/benchmarks.md). What it does for this form is done here the
// same way, with connect-es's own pieces: the handler context (createHandlerContext), the
// response once the first message or the end is there (so headers the handler sets are in
// it), each message enveloped, and the end frame with the handler's trailers and the error
// (end-frames.ts, the one the raw relay writes; the error from the surface's one mapping,
// errors.ts). Every other form still goes through connect-es (router.ts).
import { toBinary } from "@bufbuild/protobuf";
import { createHandlerContext, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import { encodeEnvelope, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { contentTypeStreamProto } from "@connectrpc/connect/protocol-connect";
import { contentTypeProto as grpcWebContentType } from "@connectrpc/connect/protocol-grpc-web";
import { GenerateResponseSchema, VllmEngine, type GenerateRequest, type GenerateResponse } from "../../gen/vllm_engine_pb.js";
import { endFrame, initialTrailer } from "./end-frames.js";
import { toConnectError } from "./errors.js";
import { generate } from "./generate.js";

type Protocol = "connect" | "grpc-web";

const CONTENT_TYPE: Record<Protocol, string> = { connect: contentTypeStreamProto, "grpc-web": grpcWebContentType };

/** The call's response, as connect-es's handler would give it. */
export async function directGenerate(protocol: Protocol, request: Request, message: GenerateRequest, contextValues: ContextValues): Promise<UniversalServerResponse> {
  const ctx = createHandlerContext({
    service: VllmEngine,
    method: VllmEngine.method.generate,
    protocolName: protocol,
    requestMethod: request.method,
    url: request.url,
    requestHeader: request.headers,
    requestSignal: request.signal,
    responseHeader: { "content-type": CONTENT_TYPE[protocol] },
    responseTrailer: initialTrailer(protocol),
    contextValues,
  });
  const messages = generate(message, ctx)[Symbol.asyncIterator]();
  const first = await step(messages);
  return { status: 200, header: ctx.responseHeader, body: framed(first, messages, ctx, protocol) };
}

type Step = { value: GenerateResponse } | { done: true } | { error: unknown };

async function step(messages: AsyncIterator<GenerateResponse>): Promise<Step> {
  try {
    const r = await messages.next();
    return r.done ? { done: true } : { value: r.value };
  } catch (error) {
    return { error };
  }
}

/** The messages enveloped, then the end-of-stream message. A reader that stops early (the
 *  client left: early-head.ts tells the handler first) returns the handler's generator, which
 *  ends its legs, as connect-es's body does; started or not, since the first step was taken. */
function framed(first: Step, messages: AsyncIterator<GenerateResponse>, ctx: HandlerContext, protocol: Protocol): AsyncIterable<Uint8Array> {
  let pending: Step | undefined = first;
  let over = false;
  const stop = async (): Promise<IteratorResult<Uint8Array>> => {
    if (!over) {
      over = true;
      await messages.return?.();
    }
    return { done: true, value: undefined };
  };
  const iterator: AsyncIterator<Uint8Array> = {
    async next() {
      if (over) return { done: true, value: undefined };
      const s = pending ?? (await step(messages));
      pending = undefined;
      if ("value" in s) return { done: false, value: encodeEnvelope(0, toBinary(GenerateResponseSchema, s.value)) };
      over = true;
      // connect-es also aborts the context's signal here, building an AbortError each call; no
      // Generate code listens to it (the client's leaving reaches the legs as clientSignal).
      const error = "error" in s ? toConnectError(s.error) : undefined;
      return { done: false, value: endFrame(protocol, error, ctx.responseTrailer) };
    },
    return: stop,
    throw: stop,
  };
  return { [Symbol.asyncIterator]: () => iterator };
}
