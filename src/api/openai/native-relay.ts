// sse_relay "native": the engine's bytes go to the client through the runtime's own pipe, with
// no JavaScript per chunk, and a tee()'d copy is watched behind them in batches of at least
// WATCH_BATCH bytes (core/batch-reader.ts), so metrics still get output tokens, usage, TPOT and
// how the stream ended. Measured in workerd: about the pass-through Worker's CPU per chunk
// (docs/benchmarks.md). What watching behind cannot do, the bytes being gone before they are
// seen: replace an engine's in-band error event (the client gets vLLM's own), or add an error
// event to a body that breaks off (the client gets a broken body) or ends without [DONE] (the
// client sees it end); metrics and the breaker get the failure either way. And a client slower
// than the engine no longer slows the engine: the runtime holds what the client has not read
// yet (at most the generation).
//
// The shape: engine body -> pipe -> tee -> the client's branch is the client's body, the other
// branch is watched. The leg's signal stops the pipe (workerd does not stop a pipe from a tee
// branch on its signal until later, and cannot pipe one into a second IdentityTransformStream).
import { batchReader, type BatchReader } from "../../core/batch-reader.js";
import { identityPipe } from "../../core/byte-pipe.js";
import { errorText, type GatewayError } from "../../core/errors.js";
import type { DetachedLeg } from "../../pd/leg.js";
import type { RelayEnd, RelayOptions, SseWatch } from "./sse-watch.js";

/** Bytes per look at the copy: a 256-token completion stream is about 55 KiB, so 4 looks. */
export const WATCH_BATCH = 16384;

type Ending = "completed" | "failed" | "cancelled";

export class NativeRelay {
  private readonly engine = identityPipe();
  private copy: BatchReader | undefined;
  private inBandError: GatewayError | undefined;
  private broke: unknown;
  private over = false;

  constructor(
    private readonly leg: DetachedLeg<Uint8Array>,
    private readonly watch: SseWatch,
    private readonly o: RelayOptions,
  ) {}

  /** Starts the pipe after `first` (the frame the pipeline read); the client's body. */
  start(first: Uint8Array): ReadableStream<Uint8Array> {
    this.watch.sawFirstChunk(); // the copy is read behind the client: TTFT is now
    const writer = this.engine.writable.getWriter();
    const feeding = writer.write(first).then(() => {
      writer.releaseLock();
      return this.leg.body.pipeTo(this.engine.writable, { signal: this.leg.signal });
    });
    const [toClient, copy] = (this.engine.readable as ReadableStream<Uint8Array>).tee();
    this.copy = batchReader(copy, WATCH_BATCH);
    // The engine's body is cancelled once both branches are: the client's goes with the
    // client, the copy here as soon as either signal says the client left.
    for (const s of this.signals) s.addEventListener("abort", this.stopWatching, { once: true });
    if (this.clientLeft) this.stopWatching();
    const watching = this.watchCopy();
    const relaying = feeding.then(
      () => this.ended(watching),
      (err: unknown) => this.broken(err, watching),
    );
    this.o.waitUntil?.(relaying);
    return toClient;
  }

  private get signals(): AbortSignal[] {
    return [this.o.clientSignal, this.leg.signal];
  }

  private get clientLeft(): boolean {
    return this.signals.some((s) => s.aborted);
  }

  private watchStopped = false;

  private readonly stopWatching = (): void => {
    this.watchStopped = true;
    this.copy?.cancel().catch(() => undefined);
  };

  /** Watches bytes the client already has (or is about to); false once there is nothing more to learn. */
  private see(bytes: Uint8Array): boolean {
    if (this.inBandError) return false;
    const r = this.watch.chunk(bytes);
    if (r.error) this.inBandError = r.error.error;
    return !r.error;
  }

  private async watchCopy(): Promise<void> {
    try {
      for (;;) {
        const r = await this.copy!.read();
        if (r.done) return;
        if (!this.see(r.value)) return this.stopWatching(); // the client's branch goes on
      }
    } catch (err) {
      // A pending read ends in the cancel's reason in workerd: not the engine's doing.
      if (!this.watchStopped) this.broke ??= err;
    }
  }

  /** The engine's body was all sent on: how did it end? */
  private async ended(watching: Promise<void>): Promise<void> {
    await watching; // the copy ends with the same body
    if (this.inBandError) return this.failed(this.inBandError);
    if (this.broke !== undefined) return this.failed(this.watch.brokenStream(errorText(this.broke)));
    const last = this.watch.close();
    if (last.error) return this.failed(last.error.error);
    this.finish("completed", { outcome: "completed", status: 200 });
  }

  /** The pipe stopped: the client left (its signal or the leg's says so a moment after the
   *  runtime cancels the body), or else the engine's body broke off. */
  private async broken(err: unknown, watching: Promise<void>): Promise<void> {
    if (!this.clientLeft) await new Promise((r) => setTimeout(r, 0));
    const cancelled = this.clientLeft;
    this.stopWatching();
    await watching;
    if (cancelled) return this.finish("cancelled", { outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    this.failed(this.watch.brokenStream(errorText(err)));
  }

  private failed(err: GatewayError): void {
    this.finish("failed", { outcome: "failed", status: err.status, errorCode: err.code });
  }

  private finish(how: Ending, end: Omit<RelayEnd, "stats">): void {
    if (this.over) return;
    this.over = true;
    for (const s of this.signals) s.removeEventListener("abort", this.stopWatching);
    if (how !== "completed") this.stopWatching();
    this.leg.end(how);
    this.watch.end(end);
  }
}
