// Reading a body whole with a size bound: client requests, engine error bodies, non-streamed
// engine answers. One reader for all, so each bound is enforced the same way and a refused
// body never leaves a locked stream behind (workerd then cannot drain it for the next request).

export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
  constructor(readonly limit: number) {
    super(`body is larger than ${limit} bytes`);
  }
}

/** The stream's bytes, at most `maxBytes`; beyond that the stream is cancelled and released. */
export async function readBounded(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      size += r.value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new BodyTooLargeError(maxBytes);
      }
      chunks.push(r.value);
    }
  } finally {
    reader.releaseLock();
  }
  return concatBytes(chunks, size);
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
