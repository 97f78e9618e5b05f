// The bounded body reader and the drain of a refused body: a body over the limit is read to its
// end when the rest fits the drain bound (bytes and time), and cancelled when it does not.
// Each case counts what the reader pulled from the source and whether the source was cancelled.
import { describe, expect, it } from "vitest";
import { BodyTooLargeError, discardRest, readBounded, type DrainBound } from "../../../src/core/body.js";

const CHUNK = 1024;

/** A source of `chunks` chunks of CHUNK bytes (endless when Infinity), each after `delayMs`. */
function source(chunks: number, delayMs = 0) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        if (seen.pulled === chunks) return c.close();
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        seen.pulled++;
        c.enqueue(new Uint8Array(CHUNK));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

describe("readBounded", () => {
  const drain: DrainBound = { maxBytes: 8 * CHUNK, maxMs: 5_000 };
  it.each([
    // chunks sent, drain bound, ended (read to the end) or cancelled, chunks pulled
    { name: "within the limit: read whole", chunks: 4, drain, tooLarge: false, cancelled: false, pulled: 4 },
    { name: "over the limit, no drain: cancelled at once", chunks: 20, drain: undefined, tooLarge: true, cancelled: true, pulled: 5 },
    { name: "over the limit, rest within the drain bound: read to the end", chunks: 12, drain, tooLarge: true, cancelled: false, pulled: 12 },
    { name: "rest exactly at the drain bound: read to the end", chunks: 13, drain, tooLarge: true, cancelled: false, pulled: 13 },
    { name: "rest one chunk past the drain bound: cancelled", chunks: 14, drain, tooLarge: true, cancelled: true, pulled: 14 },
    { name: "endless body: cancelled after the drain bound", chunks: Infinity, drain, tooLarge: true, cancelled: true, pulled: 14 },
  ])("$name", async ({ chunks, drain, tooLarge, cancelled, pulled }) => {
    const { stream, seen } = source(chunks);
    const read = readBounded(stream, 4 * CHUNK, { drain });
    if (tooLarge) await expect(read).rejects.toBeInstanceOf(BodyTooLargeError);
    else expect((await read).byteLength).toBe(chunks * CHUNK);
    expect(seen).toEqual({ pulled, cancelled });
    expect(stream.locked).toBe(false);
  });

  it("a body that stops arriving is cancelled once the drain's time is up", async () => {
    const { stream, seen } = source(Infinity, 40);
    const started = Date.now();
    await expect(readBounded(stream, 2 * CHUNK, { drain: { maxBytes: 1 << 30, maxMs: 150 } })).rejects.toBeInstanceOf(BodyTooLargeError);
    const took = Date.now() - started;
    expect(seen.cancelled).toBe(true);
    // 3 chunks to refuse (120 ms) plus the 150 ms drain, not the endless body.
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(1_500);
  });

  it("a body that fails while drained is still refused as too large", async () => {
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (++sent > 6) return c.error(new Error("client went away"));
        c.enqueue(new Uint8Array(CHUNK));
      },
    });
    await expect(readBounded(stream, 4 * CHUNK, { drain: { maxBytes: 1 << 20, maxMs: 1_000 } })).rejects.toBeInstanceOf(BodyTooLargeError);
  });
});

describe("discardRest", () => {
  it("says whether the stream ended within the bound", async () => {
    const short = source(3);
    expect(await discardRest(short.stream.getReader(), { maxBytes: 3 * CHUNK, maxMs: 1_000 })).toBe(true);
    const long = source(5);
    expect(await discardRest(long.stream.getReader(), { maxBytes: 3 * CHUNK, maxMs: 1_000 })).toBe(false);
    expect(long.seen.pulled).toBe(4);
  });
});
