// The copy the native relays read behind the client (api/native-relay.ts for SSE,
// api/engine/native-tail.ts for Generate): one branch of the engine body's tee(), read in
// batches (batch-reader.ts) by the relay's `see`, while the other branch is piped natively.
// What both relays need of it, written once: the watch loop, whether the copy broke (the
// engine's body broke: a copy that was stopped is not that), stopping it, and catching it up to
// what the client had when the pipe stopped or the client left.
import { batchReader, WATCH_BATCHES, type BatchOptions, type BatchReader } from "./batch-reader.js";

/** How long a relay waits for its hurried copy: to show a broken engine body once its pipe
 *  failed (it reads what queued in one go, then meets the error), or to show what the client
 *  had once the client left, before it takes the stop for the client's leaving. */
export const CATCH_UP_MS = 50;

/** Takes each batch (valid during the call); false when there is nothing more to learn: the
 *  watch stops, the client's branch goes on. */
export type SeeBatch = (bytes: Uint8Array) => boolean;

export class WatchedCopy {
  /** Settles when the watch is over: the copy ended, broke, or was stopped. */
  readonly watching: Promise<void>;
  /** The copy broke (so did the engine's body), unless it was stopped first. */
  broke: { err: unknown } | undefined;
  private stopped = false;
  private readonly reader: BatchReader;
  /** caughtUpNow's callers, told once a batch that did not fill the buffer was seen. */
  private readonly waiters: (() => void)[] = [];

  /** Tees `body`: the client's branch, and its copy watched by `see`. */
  static tee(body: ReadableStream<Uint8Array>, see: SeeBatch, batches: BatchOptions = WATCH_BATCHES): [ReadableStream<Uint8Array>, WatchedCopy] {
    const [branch, copy] = body.tee();
    return [branch, new WatchedCopy(copy, see, batches)];
  }

  private constructor(copy: ReadableStream<Uint8Array>, see: SeeBatch, batches: BatchOptions) {
    this.reader = batchReader(copy, batches);
    this.watching = this.watch(see);
  }

  /** Stops the watch (a pending read ends); the client's branch goes on. */
  readonly stop = (): void => {
    this.stopped = true;
    this.reader.cancel().catch(() => undefined);
  };

  /** No more pauses: the copy is needed caught up. */
  readonly hurry = (): void => this.reader.hurry();

  /** The pipe ended: the copy's last batches, read without pauses (the client's body waits for
   *  the relay's end). */
  rest(): Promise<void> {
    this.hurry();
    return this.watching;
  }

  /** Hurried; settles once the batches under way were seen (what the client had when asked:
   *  the read under way takes all that queued, and one that filled its buffer is followed by
   *  the next), the watch ended, or CATCH_UP_MS passed: the leg's check of a client that left. */
  caughtUpNow(): Promise<unknown> {
    this.hurry();
    return Promise.race([new Promise<void>((r) => this.waiters.push(r)), this.settled()]);
  }

  /** Hurried; settles once the watch ended or CATCH_UP_MS passed: a pipe that failed asks
   *  whether the engine's body broke (the copy then breaks too, after what queued). */
  settled(): Promise<unknown> {
    this.hurry();
    return Promise.race([this.watching, new Promise((r) => setTimeout(r, CATCH_UP_MS))]);
  }

  private async watch(see: SeeBatch): Promise<void> {
    try {
      for (;;) {
        const r = await this.reader.read();
        if (r.done) return;
        const more = see(r.value);
        if (!this.reader.filled) for (const w of this.waiters.splice(0)) w();
        if (!more) return this.stop();
      }
    } catch (err) {
      // A pending read ends in the cancel's reason in workerd: not the engine's doing.
      if (!this.stopped) this.broke ??= { err };
    }
  }
}
