// Relays a Generate leg's raw body to the client: the engine's frames as they are, one engine
// chunk per pull of the response body (early-head.ts), with no protobuf decode or encode per
// frame, where the decoded path decodes each message, passes it through async-iterator hops
// and connect-es serialises it again. A byte scan (core/envelope.ts) watches the frames on the
// way: chunk messages are decoded only until the first token (TTFT), after it only their
// token counts are read off the bytes (chunk-usage.ts: a streamed request's usage is the sum
// of its chunks' deltas), and `complete` messages (small) are decoded. Only whole frames are passed on, so the client never sees
// half of one. The engine's end-of-stream frame is not passed on: the gateway sends its own
// (end-frames.ts), the one a connect-es stream ends with, with an engine error, a body that
// broke off, or an end without end-of-stream frame mapped as the decoded path maps them.
//
// Why pulled by the body and not written into an IdentityTransformStream: in workerd such a
// stream gives its writer no sign of a cancelled body until the next write, so a client that
// leaves while nothing is written (a long prefill without keepalive) would go unseen; the
// early head's ReadableStream is told at once (its cancel).
import { concatBytes } from "../../core/body.js";
import { COMPRESSED_FLAG, EnvelopeScanner } from "../../core/envelope.js";
import { FrameWatch } from "./frame-watch.js";
import { NativeTail, type TailHost } from "./native-tail.js";
import type { GatewayError } from "../../core/errors.js";
import type { LegFailure } from "../../core/leg-transport.js";
import type { RawLeg } from "../../pd/leg.js";
import { endFrame } from "./end-frames.js";
import { toConnectError } from "./errors.js";
import type { StreamTiming } from "./stream-timing.js";

export type RelayEnd = { outcome: "completed" } | { outcome: "cancelled" } | { outcome: "failed"; error: GatewayError };

export interface RawRelayOptions {
  /** generate_relay "native": the rest of the body goes to a native tail (native-tail.ts). */
  nativeTail?: boolean;
  /** Log the hand-over to the native tail (config debug.log_paths). */
  logPaths?: boolean;
  /** Fires when the client goes away, before the leg's own signal when the leg first checks
   *  the copy behind the client (the native tail: a body that breaks in that window is the
   *  client's leaving, not the engine's failure). */
  clientSignal?: AbortSignal;
}

/** Cuts each chunk at whole frames, holding a partial frame back until it is complete, and
 *  stops at the first end-of-stream (or compressed) frame. */
class FrameCutter {
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  stopped = false;

  constructor(
    private readonly scanner: EnvelopeScanner,
    private readonly stopFlags: number,
  ) {}

  /** The first bytes of a frame under way, handed over (to the native tail). */
  release(): Uint8Array {
    return this.withHeld(EMPTY);
  }

  /** The bytes of `chunk` (with any held before) that complete frames before a stop. */
  cut(chunk: Uint8Array): Uint8Array {
    if (this.stopped) {
      this.scanner.push(chunk);
      return EMPTY;
    }
    const stopAt = this.scanner.push(chunk, this.stopFlags);
    if (stopAt >= 0) {
      this.stopped = true;
      return this.withHeld(chunk.subarray(0, stopAt));
    }
    const end = this.scanner.wholeUpTo;
    if (end < 0) {
      this.hold(chunk);
      return EMPTY;
    }
    const whole = this.withHeld(end === chunk.length ? chunk : chunk.subarray(0, end));
    if (end < chunk.length) this.hold(chunk.subarray(end));
    return whole;
  }

  private withHeld(bytes: Uint8Array): Uint8Array {
    if (this.heldBytes === 0) return bytes;
    const out = concatBytes([...this.held, bytes], this.heldBytes + bytes.length);
    this.held = [];
    this.heldBytes = 0;
    return out;
  }

  private hold(bytes: Uint8Array): void {
    this.held.push(bytes);
    this.heldBytes += bytes.length;
  }
}

const EMPTY = new Uint8Array(0);

/** The client's body from a raw leg, pulled chunk by chunk (early-head.ts): whole engine
 *  frames as they come, then the gateway's end-of-stream frame. `ended` says how it ended.
 *  With `nativeTail` (generate_relay "native"), once whole frames went out, next() ends early
 *  and `tail` takes the rest of the body natively (native-tail.ts). */
export class RawRelay implements TailHost {
  readonly ended: Promise<RelayEnd>;
  private settle!: (end: RelayEnd) => void;
  readonly watch: FrameWatch;
  readonly scanner: EnvelopeScanner;
  private readonly cutter: FrameCutter;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private head: Uint8Array | undefined;
  over = false;
  /** Whole frames went out: a native tail may take over now. */
  private passedFrames = false;
  /** The rest of the body, once handed to the runtime's pipe. */
  tail: NativeTail | undefined;
  /** The end-of-stream frame, once the relay is over and until it was sent. */
  private final: Uint8Array | undefined;

  constructor(
    readonly leg: RawLeg,
    private readonly protocol: "connect" | "grpc-web",
    timing: StreamTiming,
    private readonly o: RawRelayOptions = {},
  ) {
    this.ended = new Promise((r) => (this.settle = r));
    this.watch = new FrameWatch(leg.endFlag, timing);
    this.scanner = new EnvelopeScanner(this.watch);
    this.cutter = new FrameCutter(this.scanner, leg.endFlag | COMPRESSED_FLAG);
    this.reader = leg.body.getReader();
    this.head = leg.head;
    // Stopped from elsewhere (the client's signal): over now, even if the body is never
    // pulled or cancelled again (the handler must not wait for that). Once a native tail has
    // the body, it settles (the engine's end may have reached the client just before).
    leg.signal.addEventListener("abort", () => this.tail || this.cancel(), { once: true });
  }

  /** The next bytes for the client; undefined once everything was sent. Never rejects: a
   *  fault of its own ends the stream with an error end, not as a client that left. */
  async next(): Promise<Uint8Array | undefined> {
    try {
      const out = await this.relayed();
      if (out) return out;
    } catch (err) {
      if (!this.over) this.fail(this.leg.failure("read", err));
    }
    return this.takeFinal();
  }

  /** Whole engine frames from the next chunk(s), or undefined once the relay is over. */
  private async relayed(): Promise<Uint8Array | undefined> {
    while (!this.over && !this.tail) {
      if (this.o.nativeTail && this.passedFrames && !this.head) return this.handOff();
      let chunk = this.head;
      this.head = undefined;
      if (!chunk) {
        // Inline, not a helper: one promise per engine chunk (the reader's).
        let r: ReadableStreamReadResult<Uint8Array> | { error: unknown };
        try {
          r = await this.reader.read();
        } catch (error) {
          r = { error };
        }
        chunk = this.chunkOf(r);
        if (!chunk) break;
      }
      const whole = this.cutter.cut(chunk);
      if (this.watch.oversized) this.fail(this.leg.failure("oversized"));
      else if (this.watch.compressed) this.fail(this.leg.failure("compressed"));
      else if (this.watch.endPayload) this.end(this.watch.endPayload);
      if (whole.length > 0) {
        this.passedFrames = true;
        return whole;
      }
    }
    return undefined;
  }

  /** Ends the JavaScript part: the body (and any frame begun) goes to the native tail. */
  private handOff(): undefined {
    if (this.o.logPaths) console.debug(JSON.stringify({ msg: "piping the rest of the engine's body natively", protocol: this.protocol }));
    this.reader.releaseLock();
    this.tail = new NativeTail(this, this.cutter.release());
    return undefined;
  }

  /** The client went away (its signal, or the leg's stop). */
  get clientGone(): boolean {
    return this.leg.signal.aborted || this.o.clientSignal?.aborted === true;
  }

  /** The gateway's end frame the client still needs, once. */
  takeFinal(): Uint8Array | undefined {
    const last = this.final;
    this.final = undefined;
    return last;
  }

  /** The client left. */
  cancel(): void {
    if (this.over) return;
    this.over = true;
    this.leg.end("cancelled");
    this.stopReading();
    this.settle({ outcome: "cancelled" });
  }

  /** A read's chunk, or undefined when the read ended the relay. */
  private chunkOf(r: ReadableStreamReadResult<Uint8Array> | { error: unknown }): Uint8Array | undefined {
    // Stopped (the client left): the reader was cancelled, whatever the read says.
    if (this.leg.signal.aborted || this.over) this.cancel();
    else if ("error" in r) this.fail(this.leg.failure("read", r.error));
    else if (r.done) this.fail(this.leg.failure(this.scanner.atBoundary && !this.cutter.stopped ? "missing-end" : "incomplete"));
    else return r.value;
    return undefined;
  }

  private end(payload: Uint8Array): void {
    this.readToEof();
    if (this.endedWith(payload)) this.final = endFrame(this.protocol);
  }

  /** The engine's end-of-stream payload: true for a clean end, else the leg failed with the
   *  engine's error (the native tail passed the engine's frame on; the frames relay sends
   *  the gateway's error end instead). */
  endedWith(payload: Uint8Array): boolean {
    const f = this.leg.endFailure(payload);
    if (f) {
      this.fail(f);
      return false;
    }
    this.over = true;
    this.leg.end("completed");
    this.settle({ outcome: "completed" });
    return true;
  }

  /** The error end the client gets, as gatewayErrorInterceptor maps it. */
  fail(f: LegFailure): void {
    this.over = true;
    this.stopReading();
    const error = this.leg.failed(f);
    this.final = endFrame(this.protocol, toConnectError(error));
    this.settle({ outcome: "failed", error });
  }

  /** The engine's body after its end-of-stream frame: read to its end off the client's path
   *  (as connect-web does, so the engine's connection can be reused), cancelled if anything
   *  more comes, which nothing may. */
  private readToEof(): void {
    this.reader.read().then(
      (r) => r.done || this.stopReading(),
      () => undefined,
    );
  }

  private stopReading(): void {
    if (this.tail) return; // the reader was released: the tail stops the body
    this.reader.cancel().catch(() => undefined);
  }
}
