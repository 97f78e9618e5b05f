// Generate on a VllmEngine engine over fetch, framed here instead of by connect-web, so that
// after its first frame the call can hand its body over as bytes (EngineCall.detachRaw) for
// the surface to relay untouched. Frames read before that are decoded like connect-web's
// client does, and every failure is what connect-web would have thrown, mapped by the same
// rpcFailure, so the leg's error handling cannot tell the two apart.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createMethodUrl, encodeEnvelope } from "@connectrpc/connect/protocol";
import * as connect from "@connectrpc/connect/protocol-connect";
import * as grpcWeb from "@connectrpc/connect/protocol-grpc-web";
import { GenerateRequestSchema, GenerateResponseSchema, VllmEngine, type GenerateRequest, type GenerateResponse } from "../gen/vllm_engine_pb.js";
import { concatBytes } from "../core/body.js";
import { COMPRESSED_FLAG, ENVELOPE_HEADER_BYTES, MAX_FRAME_BYTES } from "../core/envelope.js";
import type { EngineCall, LegSpec, LegTransport, RawBody } from "../core/leg-transport.js";
import type { EngineTarget } from "../core/types.js";
import type { EngineConnections } from "./engine-clients.js";
import { encodeGenerateLeg } from "./generate-request.js";
import { rpcFailure } from "./vllm-engine-failures.js";

export type EnvelopedProtocol = "connect" | "grpc-web";

const EMPTY = new Uint8Array(0);
const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** The protocol's rules for a response: head checks, end frames, its error texts. */
interface Wire {
  endFlag: number;
  headers(): Headers;
  /** Throws what connect-web throws for a bad head; true when the head alone ended the call. */
  checkHead(res: Response): boolean;
  /** The error an end-of-stream payload carries (undefined: a clean end). */
  endError(payload: Uint8Array, head: Headers): unknown;
  missingEnd: string;
}

const WIRES: Record<EnvelopedProtocol, Wire> = {
  connect: {
    endFlag: connect.endStreamFlag,
    headers: () => connect.requestHeader("server_streaming", true, undefined, undefined, false),
    checkHead(res) {
      connect.validateResponse("server_streaming", true, res.status, res.headers);
      return false;
    },
    endError(payload, head) {
      if (isCleanConnectEnd(payload)) return undefined;
      const { error } = connect.endStreamFromJson(payload);
      head.forEach((value, key) => error?.metadata.append(key, value));
      return error;
    },
    missingEnd: "missing EndStreamResponse",
  },
  "grpc-web": {
    endFlag: grpcWeb.trailerFlag,
    headers: () => grpcWeb.requestHeader(true, undefined, undefined, false),
    checkHead(res) {
      const { foundStatus, headerError } = grpcWeb.validateResponse(res.status, res.headers);
      if (headerError !== undefined) throw headerError;
      return foundStatus;
    },
    endError(payload, head) {
      try {
        grpcWeb.validateTrailer(grpcWeb.trailerParse(payload), head);
        return undefined;
      } catch (err) {
        return err;
      }
    },
    missingEnd: "missing trailer",
  },
};

/** The EndStreamResponse `{}`: what a clean end without trailers is (connect-es's servers write
 *  it so). connect-es's endStreamFromJson builds a ConnectError (and its stack) on every call,
 *  whether it throws it or not (about 7% of a short relayed Generate's sampled JavaScript);
 *  every other end (metadata, an error, anything malformed) still goes to it. */
function isCleanConnectEnd(payload: Uint8Array): boolean {
  return payload.length === 2 && payload[0] === 0x7b && payload[1] === 0x7d;
}

const GENERATE_URL = (baseUrl: string) => createMethodUrl(baseUrl, VllmEngine.method.generate);

export function rawGenerateCall(
  engine: EngineTarget,
  protocol: EnvelopedProtocol,
  req: GenerateRequest,
  spec: LegSpec,
  engineFetch: typeof fetch,
): EngineCall<GenerateResponse> {
  const wire = WIRES[protocol];
  const controller = new AbortController();
  const body = encodeEnvelope(0, toBinary(GenerateRequestSchema, encodeGenerateLeg(req, spec)));
  const sent = engineFetch(GENERATE_URL(engine.url), { method: "POST", headers: wire.headers(), body, signal: controller.signal, redirect: "manual" });
  sent.catch(() => undefined); // observed by next()
  const frames = new FrameReader(wire, sent);
  return {
    next: () => frames.next().catch((err: unknown) => Promise.reject(rpcFailure(err))),
    close() {
      controller.abort();
      frames.cancel();
    },
    headers: () => undefined,
    detachRaw: () => frames.detach(),
  };
}

/** Reads and decodes frames one at a time until the body is handed over. */
class FrameReader {
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private res: Response | undefined;
  private buffered: Uint8Array = EMPTY;
  /** The bytes of the one frame returned so far (what detach hands over first). */
  private first: Uint8Array | undefined;
  private returned = 0;
  private ended = false;
  private handedOver = false;

  constructor(
    private readonly wire: Wire,
    private readonly sent: Promise<Response>,
  ) {}

  async next(): Promise<IteratorResult<GenerateResponse>> {
    if (!this.reader) await this.open();
    for (;;) {
      if (this.ended) return DONE;
      const frame = this.takeFrame();
      if (frame) {
        const message = this.message(frame);
        if (message) return message;
        continue;
      }
      const r = await this.reader!.read();
      if (r.done) return this.bodyDone();
      this.buffered = this.buffered.length === 0 ? r.value : concatBytes([this.buffered, r.value], this.buffered.length + r.value.length);
    }
  }

  private async open(): Promise<void> {
    const res = (this.res = await this.sent);
    const trailersOnly = this.wire.checkHead(res);
    if (!res.body) throw "missing response body";
    this.reader = res.body.getReader();
    if (trailersOnly) {
      if (!(await this.reader.read()).done) throw "extra data for trailers-only";
      this.ended = true;
    }
  }

  private takeFrame(): Uint8Array | undefined {
    const b = this.buffered;
    if (b.length < ENVELOPE_HEADER_BYTES) return undefined;
    const size = ENVELOPE_HEADER_BYTES + new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(1);
    if (size - ENVELOPE_HEADER_BYTES > MAX_FRAME_BYTES) throw oversizedError(); // before buffering it
    if (b.length < size) return undefined;
    this.buffered = b.subarray(size);
    return b.subarray(0, size);
  }

  /** A message frame decoded, or undefined after the end-of-stream frame (which throws when
   *  it carries an error). */
  private message(frame: Uint8Array): IteratorResult<GenerateResponse> | undefined {
    const flags = frame[0]!;
    const payload = frame.subarray(ENVELOPE_HEADER_BYTES);
    if ((flags & this.wire.endFlag) !== 0) {
      const error = this.wire.endError(payload, this.res!.headers);
      if (error !== undefined) throw error;
      this.ended = true;
      this.drainAfterEnd();
      return undefined;
    }
    if ((flags & COMPRESSED_FLAG) !== 0) throw new ConnectError("protocol error: received unsupported compressed output", Code.Internal);
    let value: GenerateResponse;
    try {
      value = fromBinary(GenerateResponseSchema, payload);
    } catch (e) {
      throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
    }
    this.first = this.returned++ === 0 ? frame : undefined;
    return { done: false, value };
  }

  /** After the end-of-stream frame: the body read to its end off the caller's path (as
   *  connect-web does, and as the raw relay does after a hand-over), so the engine's
   *  connection is released for reuse. */
  private drainAfterEnd(): void {
    const reader = this.reader;
    if (!reader) return;
    void (async () => {
      try {
        while (!(await reader.read()).done);
      } catch {
        // The engine's connection went: nothing is left to release.
      }
    })();
  }

  private bodyDone(): IteratorResult<GenerateResponse> {
    if (this.buffered.length > 0) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
    throw this.wire.missingEnd;
  }

  detach(): RawBody | undefined {
    if (!this.first || this.ended || this.handedOver || !this.res?.body) return undefined;
    this.handedOver = true;
    this.reader!.releaseLock();
    const wire = this.wire;
    const head = this.res.headers;
    return {
      head: this.buffered.length === 0 ? this.first : concatBytes([this.first, this.buffered], this.first.length + this.buffered.length),
      body: this.res.body,
      endFlag: wire.endFlag,
      endFailure: (payload) => {
        let error: unknown;
        try {
          error = wire.endError(payload, head);
        } catch (err) {
          error = err; // an end frame that is not one (connect-es: "invalid end stream")
        }
        return error === undefined ? undefined : rpcFailure(error);
      },
      failure: (how, cause) => rpcFailure(rawFailureReason(wire, how, cause)),
    };
  }

  cancel(): void {
    if (this.handedOver) return; // the consumer's reader is cancelled by its own stop
    this.reader?.cancel().catch(() => undefined);
  }
}

function rawFailureReason(wire: Wire, how: Parameters<RawBody["failure"]>[0], cause: unknown): unknown {
  switch (how) {
    case "read":
      return cause;
    case "incomplete":
      return new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
    case "missing-end":
      return wire.missingEnd;
    case "compressed":
      return new ConnectError("protocol error: received unsupported compressed output", Code.Internal);
    case "oversized":
      return oversizedError();
  }
}

function oversizedError(): ConnectError {
  return new ConnectError(`protocol error: message larger than ${MAX_FRAME_BYTES} bytes`, Code.ResourceExhausted);
}

/** The VllmEngine transport with decode and regular legs to engines that speak `protocol`
 *  made as raw calls (their bodies can be handed over); everything else as `base` does it. */
export function withRawBodies(
  base: LegTransport<GenerateRequest, GenerateResponse>,
  protocol: EnvelopedProtocol,
  engines: Pick<EngineConnections, "fetchFor">,
): LegTransport<GenerateRequest, GenerateResponse> {
  return {
    ...base,
    start: (engine, req, spec) =>
      spec.leg !== "prefill" && engine.transport === protocol ? rawGenerateCall(engine, protocol, req, spec, engines.fetchFor(engine)) : base.start(engine, req, spec),
  };
}
