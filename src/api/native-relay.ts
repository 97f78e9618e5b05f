// sse_relay "native" (the default), for chat/completions SSE and for Messages streams: the
// engine's bytes go to the client through the runtime's own pipe, with no JavaScript per chunk,
// and a tee()'d copy is watched behind them in batches (what queued in the copy every 50 ms:
// core/batch-reader.ts) by the API's StreamWatch, so metrics still get output tokens, usage,
// TPOT and how the stream ended. Its CPU against the pass-through Worker's and against the
// floor any watched tee() copy costs: docs/configuration.md (`sse_relay`), docs/benchmarks.md.
// What watching behind cannot do, the bytes being gone before they are seen: replace an
// engine's in-band error event (the client gets vLLM's own, already in the API's shape). The
// pipe leaves the client's body open (preventClose, preventAbort: workerd still pumps
// natively, `tryPumpTo(sink, end = !preventClose)`), so a body that breaks off, or ends
// cleanly without its final event ([DONE], message_stop), still gets the gateway's error
// event (in the API's shape) naming the engine once the pipe settles. And a client slower
// than the engine no longer slows the engine: the runtime holds what the client has not read
// yet (at most the generation).
//
// The shape: engine body -> tee -> the client's branch piped into the client's body (left open
// for that error event), the other branch watched. The client's going shows on its signal, or
// as the pipe failing once the runtime cancels the client's body. On its signal the leg first
// asks whether the copy, hurried to what the client had, saw the final event (a client closes
// on [DONE]): then the stream is recorded as it ended. Either way the copy is then cancelled
// too, and with both branches gone the engine's body is.
//
// An event longer than the watch holds (bounds.max_sse_event_bytes) fails the leg at once,
// which aborts the engine's fetch: the engine's body errors at its source, the pipe passes on
// what it holds and then fails between writes, and the client's body (left open by
// preventAbort) gets a blank line, ending the event's first bytes that went ahead of the
// watch, then the gateway's `<leg>_event_too_large` error event. Not the pipe's signal: in
// workerd a pipe stopped by its signal can be stopped inside a write to the client's body
// (internal.c++: the pump is wrapped in `AbortSignal::maybeCancelWrap`), and that write's
// IdentityTransformStream is then left broken ("writer canceled"), so on workerd's own socket
// the client's connection broke off without the error event.
import type { BatchOptions } from "../core/batch-reader.js";
import { identityPipe } from "../core/byte-pipe.js";
import { WatchedCopy } from "../core/watched-copy.js";
import { errorText, type GatewayError } from "../core/errors.js";
import type { DetachedLeg } from "../pd/leg.js";
import { CANCELLED, COMPLETED, failedWith, type RelayEnding, type StreamWatch } from "./stream-watch.js";

export interface NativeRelayOptions {
  clientSignal: AbortSignal;
  /** Keeps work that ends after the response body (the pipe's end) in the request's life. */
  waitUntil?(promise: Promise<unknown>): void;
  /** The API's error event, as SSE text. */
  errorEvent(err: GatewayError): string;
  /** How the copy is read behind the client (default WATCH_BATCHES). */
  batches?: BatchOptions;
}

const encoder = new TextEncoder();

export class NativeRelay {
  private readonly toClient = identityPipe();
  private copy: WatchedCopy | undefined;
  private inBandError: GatewayError | undefined;
  private over = false;
  /** The watch's cap was passed: the engine's body is cut at its source with this error. */
  private tooLarge: GatewayError | undefined;

  constructor(
    private readonly leg: DetachedLeg<Uint8Array>,
    private readonly watch: StreamWatch,
    private readonly o: NativeRelayOptions,
  ) {}

  /** Starts the pipe after `first` (the frame the pipeline read); the client's body. */
  start(first: Uint8Array): ReadableStream<Uint8Array> {
    if (this.clientLeft) return this.goneAlready();
    this.watch.sawFirstChunk();
    this.see(first);
    const [branch, copy] = WatchedCopy.tee(this.leg.body, (bytes) => this.see(bytes), this.o.batches);
    this.copy = copy;
    // A client that leaves is checked against the copy first (the leg machine's rule): a
    // client closes on [DONE], which may have reached it before the copy read it. The leg's
    // signal then stops the pipe and the copy. Without the check (a leg that cannot), the
    // client's signal stops the copy at once.
    const checked = this.leg.watchBehind !== undefined;
    this.leg.watchBehind?.(async () => {
      await copy.caughtUpNow();
      return this.watch.sawFinal || this.inBandError !== undefined;
    });
    for (const s of checked ? [this.leg.signal] : this.signals) s.addEventListener("abort", this.stopWatching, { once: true });
    const writer = this.toClient.writable.getWriter();
    const piped = writer.write(first).then(
      () => {
        writer.releaseLock();
        // preventClose, preventAbort: the gateway's error event may follow an end without
        // [DONE] or a broken body. The signal (the client left) takes a while to stop a pipe
        // from a tee branch in workerd; the copy is cancelled at once (stopWatching).
        return branch.pipeTo(this.toClient.writable, { preventClose: true, preventAbort: true, signal: this.leg.signal });
      },
      (err: unknown) => {
        branch.cancel(err).catch(() => undefined); // never piped: the copy's cancel alone would not end the engine's body
        throw err;
      },
    );
    const relaying = piped.then(
      () => this.ended(copy),
      (err: unknown) => this.broken(err, copy),
    );
    this.o.waitUntil?.(relaying);
    return this.toClient.readable as ReadableStream<Uint8Array>;
  }

  private get signals(): AbortSignal[] {
    return [this.o.clientSignal, this.leg.signal];
  }

  private get clientLeft(): boolean {
    return this.signals.some((s) => s.aborted);
  }

  private readonly stopWatching = (): void => this.copy?.stop();

  /** The client left before the pipe started: nothing to relay. */
  private goneAlready(): ReadableStream<Uint8Array> {
    this.leg.body.cancel().catch(() => undefined);
    this.finish(CANCELLED);
    return new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  }

  /** Watches the engine's bytes; false once there is nothing more to learn. */
  private see(bytes: Uint8Array): boolean {
    if (this.inBandError) return false;
    const r = this.watch.chunk(bytes);
    if (r.error?.error.code.endsWith("_event_too_large")) {
      this.tooLarge = r.error.error;
      this.leg.end("failed"); // aborts the engine's fetch (see the top)
    } else if (r.error) this.inBandError = r.error.error;
    return !r.error;
  }

  /** The engine's body reached the client's pipe whole: how did it end? */
  private async ended(copy: WatchedCopy): Promise<void> {
    await copy.rest(); // the copy ends with the same body
    if (this.inBandError) return this.endWith(this.inBandError);
    if (this.tooLarge) return this.endWith(this.tooLarge); // the body ended before the cut took
    if (copy.broke) return this.sendError(this.watch.brokenStream(errorText(copy.broke.err)), true);
    const fragment = this.watch.holding;
    const last = this.watch.close();
    if (!last.error) {
      this.finish(COMPLETED);
      return this.toClient.writable.close().catch(() => undefined);
    }
    if (this.clientLeft) return this.cancelled(); // the watch was stopped short of [DONE]
    return this.sendError(last.error.error, fragment);
  }

  /** Ends the client's body with the gateway's error event (a blank line first ends a
   *  half-sent event, so the error is an event of its own). */
  private async sendError(err: GatewayError, fragment: boolean): Promise<void> {
    this.finish(failedWith(err));
    const writer = this.toClient.writable.getWriter();
    await writer.write(encoder.encode((fragment ? "\n\n" : "") + this.o.errorEvent(err))).catch(() => undefined);
    await writer.close().catch(() => undefined);
  }

  /** The pipe stopped: the client left (its signal or the leg's says so, or the runtime
   *  cancelled the client's body while the copy reads on), or else the engine's body broke off
   *  (the copy breaks too; the client's body, still open, gets the gateway's error event). */
  private async broken(err: unknown, copy: WatchedCopy): Promise<void> {
    if (this.tooLarge && !this.clientLeft) return this.sendError(this.tooLarge, true); // the watch is stopped
    // A broken engine body breaks the copy too, once it read what queued before the error.
    if (!this.clientLeft) await copy.settled();
    const cancelled = this.clientLeft || copy.broke === undefined;
    copy.stop(); // with the client's branch gone too, the engine's body is cancelled
    await copy.watching;
    if (this.inBandError) return this.finish(failedWith(this.inBandError));
    // The copy saw the final event: the client had the whole stream (it closed on [DONE]).
    if (this.watch.sawFinal) return this.endWith(undefined);
    // Closed too: a client whose going the runtime did not pass on (an aborted subrequest)
    // would otherwise wait on its body for ever.
    if (cancelled) return this.cancelled();
    // The watch reads behind the pipe, so whether a half-sent event went ahead is unknown: a
    // blank line ends any (after a whole event it is an empty line, which SSE parsers skip).
    return this.sendError(this.watch.brokenStream(errorText(copy.broke?.err ?? err)), true);
  }

  /** A stream whose end the client already has: completed, or failed (vLLM's error event, a
   *  broken body). */
  private endWith(err: GatewayError | undefined): Promise<void> {
    this.finish(err ? failedWith(err) : COMPLETED);
    return this.toClient.writable.close().catch(() => undefined);
  }

  private cancelled(): Promise<void> {
    this.finish(CANCELLED);
    return this.toClient.writable.close().catch(() => undefined);
  }

  private finish(end: RelayEnding): void {
    if (this.over) return;
    this.over = true;
    for (const s of this.signals) s.removeEventListener("abort", this.stopWatching);
    if (end.outcome !== "completed") this.stopWatching();
    this.leg.end(end.outcome);
    this.watch.end(end);
  }
}
