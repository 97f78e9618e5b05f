// Reads a byte stream in batches of at least `minBytes` where the runtime can gather them
// itself (workerd's ReadableStreamBYOBReader.readAtLeast: one JavaScript step per batch
// rather than per chunk), else chunk by chunk (a stream that is not a byte stream, Node).
export interface BatchReader {
  /** The next batch (valid until the next read), or done. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** A pending read then ends: done, or (workerd) rejected with `reason`. */
  cancel(reason?: unknown): Promise<void>;
}

export function batchReader(body: ReadableStream<Uint8Array>, minBytes: number): BatchReader {
  const byob = byobReader(body);
  if (!byob) return body.getReader();
  let buffer = new Uint8Array(minBytes * 2);
  let ended = false;
  return {
    async read() {
      if (ended) return { done: true, value: undefined };
      const r = await byob.readAtLeast(minBytes, buffer);
      // The streams spec lets the last bytes come with done: hand them over, end next time.
      ended = r.done;
      if (!r.value || r.value.byteLength === 0) return { done: true, value: undefined };
      buffer = new Uint8Array(r.value.buffer); // the read transferred it: reuse it next time
      return { done: false, value: r.value };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

function byobReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | undefined {
  try {
    const reader = body.getReader({ mode: "byob" });
    if (typeof reader.readAtLeast === "function") return reader;
    reader.releaseLock();
  } catch {
    // not a byte stream: read it chunk by chunk
  }
  return undefined;
}
