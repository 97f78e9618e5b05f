// gzip for Connect and gRPC-web messages, over the runtime's CompressionStream and
// DecompressionStream: connect-es ships gzip only in @connectrpc/connect-node (node:zlib), and
// the Worker should not depend on the Node compatibility layer for its hot path. Handed to the
// router as `acceptCompression`, so request envelopes flagged compressed are inflated and
// responses are compressed when the client's accept-encoding header asks for gzip.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";
import { BodyTooLargeError, readBounded } from "../../core/body.js";

export const gzip: Compression = {
  name: "gzip",
  compress: (bytes) => transform(bytes, new CompressionStream("gzip"), Number.POSITIVE_INFINITY),
  decompress: async (bytes, readMaxBytes) => {
    if (bytes.byteLength === 0) return new Uint8Array(0);
    try {
      return await transform(bytes, new DecompressionStream("gzip"), readMaxBytes);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      throw new ConnectError(`message is not valid gzip: ${(err as Error).message}`, Code.InvalidArgument);
    }
  },
};

/** Runs bytes through a (de)compression stream, stopping once the output passes `maxBytes`
 *  (a small body must not inflate into an unbounded one). */
async function transform(bytes: Uint8Array, stream: TransformStream<Uint8Array, Uint8Array>, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  try {
    return await readBounded(new Response(bytes).body!.pipeThrough(stream), maxBytes);
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      throw new ConnectError(`message is larger than configured readMaxBytes ${maxBytes} after decompression`, Code.ResourceExhausted);
    }
    throw err;
  }
}
