// The keepalive message of a streamed Generate: an empty GenerateResponse (no `response` case
// set), enveloped for the client's wire format. It is what a newer engine's message of a kind
// an older client does not know looks like, so a proto3 client that skips unknown cases skips
// it; clients that cannot must leave `pd.stream_keepalive_ms` at 0 (docs/operations.md). Pure.
import type { WireFormat } from "./content-types.js";

const BINARY = Uint8Array.of(0, 0, 0, 0, 0);
/** `{}` in a 5-byte envelope: JSON codecs cannot parse an empty payload. */
const JSON_EMPTY = Uint8Array.of(0, 0, 0, 0, 2, 0x7b, 0x7d);

/** The keepalive frame for a streaming wire format (flag 0: not compressed, which every
 *  encoding allows per message). */
export function keepaliveFrame(format: Pick<WireFormat, "binary">): Uint8Array {
  return format.binary ? BINARY : JSON_EMPTY;
}
