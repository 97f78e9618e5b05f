// Reads a tee()'d copy of a byte stream behind its sibling branch in batches, one JavaScript
// step per batch rather than per chunk (the native relays' watch: api/native-relay.ts,
// api/engine/native-tail.ts). After each batch it waits `pauseMs`, letting chunks queue in the
// branch, then takes whatever is queued in one BYOB read (workerd gathers the queued chunks
// into the buffer). It never asks for more bytes than are there: measured in workerd, a
// pending readAtLeast(16 KiB) on one tee branch made the source wait for 16 KiB, holding the
// sibling (the client's branch) back too, so an SSE client got its stream in 16 KiB pieces.
// The buffer starts at `firstBytes` and doubles after each read that filled it, up to
// `maxBytes`. The native relays start at 16 KiB: from 4 KiB, a 256-token stream (54 KB) that
// came at once took four reads (4, 8, 16, 32 KiB) instead of three (16, 32, 64), and 2 ms of CPU
// more per stream in workerd (side by side, 2026-12-08); a 1-token stream costs the same from 4,
// 16 or 64 KiB.
// A stream that is not a byte stream (Node) is read chunk by chunk.
export interface BatchReader {
  /** The next batch (valid until the next read), or done. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** The last batch filled the buffer: more may have queued behind it. */
  readonly filled: boolean;
  /** A pending read then ends: done, or (workerd) rejected with `reason`. */
  cancel(reason?: unknown): Promise<void>;
  /** No more pauses: the caller needs the copy caught up (a pipe that stopped: did the
   *  engine's body break, so that the copy breaks too?). */
  hurry(): void;
}

export interface BatchOptions {
  /** The most one read takes (its buffer). */
  maxBytes: number;
  /** The wait before each read that did not fill the buffer. */
  pauseMs: number;
  /** The first read's buffer; each read that fills it doubles it, up to maxBytes. */
  firstBytes?: number;
}

/** The native relays' watch: a 256-token stream at 20 ms a token is about 100 looks instead of
 *  256 reads, a stream that comes at once a few; what the watch times (the last token, for
 *  TPOT) it sees at most the pause late. */
export const WATCH_BATCHES: BatchOptions = { maxBytes: 64 * 1024, pauseMs: 50, firstBytes: 16 * 1024 };

export function batchReader(body: ReadableStream<Uint8Array>, o: BatchOptions): BatchReader {
  const byob = byobReader(body);
  if (!byob) {
    const reader = body.getReader();
    return { read: () => reader.read(), filled: false, cancel: (reason) => reader.cancel(reason), hurry: () => undefined };
  }
  let buffer = new Uint8Array(Math.min(o.firstBytes ?? o.maxBytes, o.maxBytes));
  let full = false;
  let ended = false;
  let cancelled = false;
  let hurried = false;
  let wake: (() => void) | undefined;
  return {
    async read() {
      if (!full && !hurried) {
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, o.pauseMs);
        });
      }
      wake = undefined;
      if (ended || cancelled) return { done: true, value: undefined };
      const size = buffer.byteLength; // the read detaches the buffer
      const r = await byob.read(buffer);
      // The streams spec lets the last bytes come with done: hand them over, end next time.
      ended = r.done;
      if (!r.value || r.value.byteLength === 0) return { done: true, value: undefined };
      full = r.value.byteLength === size;
      // The read transferred the buffer: reuse it next time, or a larger one after a full read.
      buffer = full && size < o.maxBytes ? new Uint8Array(Math.min(2 * size, o.maxBytes)) : new Uint8Array(r.value.buffer);
      return { done: false, value: r.value };
    },
    get filled() {
      return full;
    },
    cancel: (reason) => {
      cancelled = true;
      return byob.cancel(reason);
    },
    hurry: () => {
      hurried = true;
      wake?.();
    },
  };
}

function byobReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | undefined {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream: read it chunk by chunk
  }
  return undefined;
}
