// A non-streamed answer read whole off a leg (bounded), for a surface that must see it before
// the client does (the Responses API stores it; the Messages API renders its errors).
import { concatBytes } from "../core/body.js";
import { clientCancelledError, errorText, GatewayError } from "../core/errors.js";
import type { LegStream } from "../pd/leg.js";

/** Bound on a non-streamed answer the gateway holds before answering. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export async function readLegBody(stream: LegStream<Uint8Array>, clientSignal: AbortSignal, maxBytes = MAX_ANSWER_BYTES): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const r = await stream.next();
      if (r.done) break;
      size += r.value.byteLength;
      if (size > maxBytes) throw new GatewayError("response_too_large", 502, `engine response: body is larger than ${maxBytes} bytes${stream.engine ? ` (engine '${stream.engine}')` : ""}`);
      chunks.push(r.value);
    }
  } catch (err) {
    stream.cancel();
    if (clientSignal.aborted) throw clientCancelledError();
    if (err instanceof GatewayError) throw err;
    throw new GatewayError("response_too_large", 502, `engine response: ${errorText(err)}`);
  }
  return concatBytes(chunks, size);
}
