// The seam between the PD executor and the engine transports: what one leg asks of an
// engine (LegSpec, wire-neutral), how a call looks while it runs (EngineCall), and how a
// transport says a call failed (LegFailure). Each transport in backends/ encodes a LegSpec
// onto its own payload (protobuf fields, JSON body members); pd/ decides what goes in it.
import type { Code } from "@connectrpc/connect";
import type { EngineTarget, Leg } from "./types.js";

export interface LegSpec {
  leg: Leg;
  /** The engine-side request id: both legs of one attempt share it, each attempt has its own. */
  requestId: string;
  /** The gateway's KV params (JSON object text). Client-sent KV params never reach an engine. */
  kvParamsJson?: string;
  /** Legacy Mooncake: decode pointed at prefill's bootstrap address in the typed form. */
  kvBootstrap?: { host: string; port: number };
  /** Pinned data-parallel rank; unset lets the engine balance. */
  dataParallelRank?: number;
  /** Decode receives the KV instead of the pixels (ARCHITECTURE decision 6). */
  stripPixels?: boolean;
  /** Sampling values sent in place of the client's on this leg: the prefill cap
   *  (pd/prefill-cap.ts). Absent: the client's own values. */
  sampling?: LegSampling;
}

/** A leg's sampling, wire-neutral: each transport writes every field in its own form
 *  (SamplingParams fields; OpenAI body members, where an empty or default value is the member
 *  left out). */
export interface LegSampling {
  maxTokens: number;
  minTokens: number;
  n: number;
  ignoreEos: boolean;
  stop: readonly string[];
  stopTokenIds: readonly number[];
  /** Top logprobs per output token; undefined: none. */
  logprobs?: number;
  /** Logprobs per prompt token; undefined: none. */
  promptLogprobs?: number;
  stream: boolean;
}

/** How a call failed, in the transport's terms:
 *  - rpc: the engine's RPC ended with a Connect/gRPC error (any phase);
 *  - transport: no answer at all (connection refused, lost, reset);
 *  - status: an HTTP engine answered with an error status;
 *  - read: the answer broke off or was larger than allowed;
 *  - malformed: the answer arrived but could not be decoded (a broken engine, never the client). */
export type LegFailureKind = "rpc" | "transport" | "status" | "read" | "malformed";

export class LegFailure extends Error {
  override name = "LegFailure";
  constructor(
    readonly kind: LegFailureKind,
    /** The engine's status as HTTP (502 when it gave none). */
    readonly status: number,
    message: string,
    /** The engine's Connect code, for rpc failures. */
    readonly connectCode?: Code,
  ) {
    super(message);
  }
}

export interface EngineCall<F> {
  /** The next frame (a message, or a body chunk); rejects with a LegFailure. */
  next(): Promise<IteratorResult<F>>;
  /** Ends the call now. Over HTTP closing the connection is vLLM's abort. */
  close(): void;
  /** The engine's response headers once its head arrived (HTTP), else undefined. */
  headers(): Headers | undefined;
  /** Hands over the frames not yet read as the transport's own stream, so a consumer can
   *  pipe them without a JS step per frame; next() is not called again. Undefined where the
   *  transport cannot (or the call has ended). close() still stops it. */
  detach?(): ReadableStream<F> | undefined;
  /** Hands over the call's raw body after its first frame (enveloped transports), so a
   *  consumer can relay the engine's bytes as they are. Only right after the first frame. */
  detachRaw?(): RawBody | undefined;
}

/** An enveloped engine body handed over as bytes (RawBody.failure explains its ends). */
export interface RawBody {
  /** The first frame's own bytes and whatever the call read after it. */
  head: Uint8Array;
  /** The rest of the engine's body. */
  body: ReadableStream<Uint8Array>;
  /** The flag bit of the protocol's end-of-stream frame (Connect 0x02, gRPC-web trailer 0x80). */
  endFlag: number;
  /** The failure an end-of-stream payload reports, or undefined for a clean end. */
  endFailure(payload: Uint8Array): LegFailure | undefined;
  /** The failure the call would have raised for a body that broke off (`read`, with the
   *  reader's error), ended inside a frame (`incomplete`), ended without an end-of-stream
   *  frame (`missing-end`) or sent a compressed frame it never asked for (`compressed`). */
  failure(how: "read" | "incomplete" | "missing-end" | "compressed" | "oversized", cause?: unknown): LegFailure;
}

/** Collects what a drained prefill leg returned: its KV handoff (JSON object text). */
export interface Harvester<F> {
  push(frame: F): void;
  result(): string | undefined;
}

export interface TransportTraits {
  /** Decode can be pointed at prefill's bootstrap address (Mooncake) in a typed form, so a
   *  Mooncake decode leg depends on prefill having run. */
  typedBootstrap: boolean;
  /** Multimodal inputs ride only the prefill leg (decode may get them stripped). */
  pixelsOnPrefillOnly: boolean;
}

export interface LegTransport<P, F> {
  readonly traits: TransportTraits;
  start(engine: EngineTarget, payload: P, spec: LegSpec): EngineCall<F>;
  /** The engine's Abort RPC; undefined where closing the connection is the abort. */
  abort?(engine: EngineTarget, requestId: string): Promise<void>;
  harvester(): Harvester<F>;
}
