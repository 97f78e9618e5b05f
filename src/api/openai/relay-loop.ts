// The inspecting SSE relay's loop: the engine's body read in one loop that writes each chunk,
// as watched (SseWatch), into an IdentityTransformStream the runtime sends on. One await for
// the read and one for the write per chunk: measured in workerd, such a loop costs about 1.9x
// a native pipe per chunk where a JS TransformStream pipe costs about 2.6x, and a bare Worker
// doing nothing but this loop costs as much as the gateway's relay (docs/benchmarks.md,
// "relay floor"). Any way the stream can fail mid-way (an in-band error event, a broken
// connection, an end without [DONE]) becomes one final gateway error event, then the body
// closes.
import { identityPipe } from "../../core/byte-pipe.js";
import { errorText, GatewayError } from "../../core/errors.js";
import type { DetachedLeg } from "../../pd/leg.js";
import { sseErrorEvent } from "./errors.js";
import { CANCELLED, COMPLETED, failedWith, type RelayEnding, type RelayOptions, type SseWatch, type WatchResult } from "./sse-watch.js";

const encoder = new TextEncoder();

export class RelayLoop {
  private readonly pipe = identityPipe();
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private over = false;

  constructor(
    private readonly leg: DetachedLeg<Uint8Array>,
    private readonly watch: SseWatch,
    private readonly o: RelayOptions,
  ) {
    this.writer = this.pipe.writable.getWriter();
    this.reader = leg.body.getReader();
  }

  /** Starts the loop, after `first` (the frame the pipeline read) when there is one; the
   *  client's body. */
  start(first?: Uint8Array): ReadableStream<Uint8Array> {
    // The leg is stopped (the client left): the pending read ends, and the loop sees the signal.
    const signal = this.leg.signal;
    const stop = (): void => void this.reader.cancel(signal.reason).catch(() => undefined);
    signal.addEventListener("abort", stop, { once: true });
    // The client's side gone (the runtime cancelled the body) shows as a failing write in the
    // loop, or here; between writes the client's signal (checked after every read) tells first.
    this.writer.closed.catch(() => (this.over ? undefined : this.cancelled()));
    const relaying = this.run(first)
      .catch(() => (this.over ? undefined : this.cancelled()))
      .finally(() => signal.removeEventListener("abort", stop));
    this.o.waitUntil?.(relaying);
    return this.pipe.readable as ReadableStream<Uint8Array>;
  }

  private async run(first: Uint8Array | undefined): Promise<void> {
    const head = first && this.send(this.watch.chunk(first));
    if (head === false) return;
    await head;
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await this.reader.read();
      } catch (err) {
        if (this.stopped()) return this.cancelled();
        return this.fail(err instanceof GatewayError ? err : this.watch.brokenStream(errorText(err)));
      }
      if (this.over) return;
      if (this.stopped()) return this.cancelled();
      if (r.done) break;
      const sent = this.send(this.watch.chunk(r.value));
      if (sent === false) return;
      await sent;
    }
    const last = this.send(this.watch.close());
    if (last === false) return;
    await last;
    this.finish(COMPLETED);
    await this.writer.close();
  }

  /** The watched bytes written, or false when the watch found the stream's end (an in-band
   *  error, now written). No async step of its own: one await per chunk besides the read. */
  private send(r: WatchResult): Promise<void> | false {
    if (r.error) {
      this.fail(r.error.error, r.error.before).catch(() => undefined); // the client may be gone
      return false;
    }
    return r.out ? this.writer.write(r.out) : Promise.resolve();
  }

  private stopped(): boolean {
    return this.leg.signal.aborted || this.o.clientSignal.aborted;
  }

  private cancelled(): void {
    this.writer.close().catch(() => undefined); // a reader still there (the runtime's) sees the body end
    this.finish(CANCELLED);
  }

  private async fail(err: GatewayError, before = ""): Promise<void> {
    this.finish(failedWith(err));
    await this.writer.write(encoder.encode(before + sseErrorEvent(err)));
    await this.writer.close();
  }

  private finish(end: RelayEnding): void {
    if (this.over) return;
    this.over = true;
    if (end.outcome !== "completed") this.reader.cancel().catch(() => undefined);
    this.leg.end(end.outcome);
    this.watch.end(end);
  }
}
