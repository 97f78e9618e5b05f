// Reading a body whole with a size bound: client requests, engine error bodies, non-streamed
// engine answers. One reader for all, so each bound is enforced the same way and a refused
// body never leaves a locked stream behind (workerd then cannot drain it for the next request).
// A client body refused for its size is read to its end, within a bound, before the refusal is
// sent: workerd resets a connection whose request body was cancelled mid-way, and `wrangler
// dev`'s proxy then answers the next request on it with a 503 (docs/operations.md).

export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
  constructor(readonly limit: number) {
    super(`body is larger than ${limit} bytes`);
  }
}

/** How much of a refused body is still read and dropped, and for how long. */
export interface DrainBound {
  maxBytes: number;
  maxMs: number;
}

/** A client body over the limit is drained this far past it before the 413 (as nginx's
 *  lingering close): 16 MiB, 10 s. Beyond either the body is cancelled. */
export const REFUSED_BODY_DRAIN: DrainBound = { maxBytes: 16 * 1024 * 1024, maxMs: 10_000 };

export interface ReadBoundedOptions {
  /** Read and drop the rest of a body over `maxBytes`, up to this bound, instead of cancelling it. */
  drain?: DrainBound;
}

/** The stream's bytes, at most `maxBytes`; beyond that the rest is drained (options.drain) or
 *  the stream cancelled, and BodyTooLargeError thrown. The reader is released either way. */
export async function readBounded(stream: ReadableStream<Uint8Array>, maxBytes: number, options: ReadBoundedOptions = {}): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      size += r.value.byteLength;
      if (size > maxBytes) {
        const ended = options.drain !== undefined && (await discardRest(reader, options.drain).catch(() => false));
        if (!ended) await reader.cancel().catch(() => undefined);
        throw new BodyTooLargeError(maxBytes);
      }
      chunks.push(r.value);
    }
  } finally {
    reader.releaseLock();
  }
  return concatBytes(chunks, size);
}

/** A client body, at most `maxBytes`, with a refused one drained by REFUSED_BODY_DRAIN. */
export function readClientBody(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  return readBounded(stream, maxBytes, { drain: REFUSED_BODY_DRAIN });
}

/** Reads and drops the rest of a stream. True when it ended within the bound; false when it
 *  had more than `maxBytes` left or did not end within `maxMs` (the caller cancels it). */
export async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, bound: DrainBound): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), bound.maxMs)));
  let left = bound.maxBytes;
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), expired]);
      if (r === "expired") return false;
      if (r.done) return true;
      left -= r.value.byteLength;
      if (left < 0) return false;
    }
  } finally {
    clearTimeout(timer);
  }
}

export function concatBytes(chunks: readonly Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const only = chunks.length === 1 ? chunks[0]! : undefined;
  if (only && only.byteLength === size && only.buffer instanceof ArrayBuffer) return only as Uint8Array<ArrayBuffer>;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
