// Request bodies are checked before Connect sees them, so that client mistakes get a 4xx that
// names the body rather than whatever connect-es makes of them: an unparsable binary message
// (connect-es: Internal), bytes that are not an envelope at all (connect-es reads the first
// five bytes as a length: "message size 578053496 is larger than configured readMaxBytes"),
// a frame flagged compressed with no encoding declared. gzip-compressed messages are inflated
// (bounded) to be checked; an encoding the gateway does not know is left to Connect, which
// answers Unimplemented naming it. JSON messages are left to Connect (it already answers
// InvalidArgument). The body is read once, bounded by the configured limit, and handed on as
// the bytes read (Connect takes them as they are: no Request is rebuilt around them).
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import { ConnectError, Code } from "@connectrpc/connect";
import { reject } from "../../errors/render.js";
import { gzip } from "./compression.js";
import type { WireFormat } from "./content-types.js";
import { BodyTooLargeError, readClientBody } from "../../core/body.js";

/** The body as checked: its bytes, or none when it was left unread (Connect reads it), and
 *  its one binary message decoded, when it had exactly one. */
export interface CheckedBody {
  bytes?: Uint8Array;
  message?: unknown;
}

const UNREAD: CheckedBody = {};

/** The body's bytes once checked, or the 4xx answer to it: a call of `method` in `format`
 *  (the router's, from the path and the content type). */
export async function checkProtoBody(request: Request, method: DescMethod, format: WireFormat, maxBytes: number): Promise<CheckedBody | Response> {
  // Unary JSON: nothing to unframe, and Connect reports bad JSON well. Only a body without a
  // declared length is read here, so that one over the limit is drained and refused with 413
  // (Connect's own readMaxBytes would cancel it; see core/body.ts).
  const unaryJson = !format.enveloped && !format.binary;
  if (unaryJson && request.headers.has("content-length")) return UNREAD;
  const bytes = await readBody(request, unaryJson ? maxBytes : maxBytes + 5);
  if (bytes === undefined) return reject(request, 413, "body_too_large", `body: larger than ${maxBytes} bytes`);
  if (unaryJson) return { bytes };
  const encoding = encodingOf(request, format);
  const payloads = format.enveloped ? unframe(bytes) : [{ data: bytes, compressed: encoding !== undefined }];
  if (typeof payloads === "string") {
    const name = format.protocol === "connect" ? "Connect" : "gRPC-web";
    return reject(
      request,
      400,
      "invalid_envelope",
      `body: the body is not a ${name} envelope (each message is a flags byte and a 4-byte big-endian length, then the message): ${payloads}`,
    );
  }
  const decoded: unknown[] = [];
  for (const p of payloads) {
    let data = p.data;
    if (p.compressed) {
      if (!encoding) return reject(request, 400, "invalid_request", "body: a message is flagged compressed but no encoding was declared");
      if (encoding !== gzip.name) continue; // Connect answers Unimplemented, naming the encoding
      try {
        data = await gzip.decompress(p.data, maxBytes);
      } catch (err) {
        const tooLarge = err instanceof ConnectError && err.code === Code.ResourceExhausted;
        return tooLarge
          ? reject(request, 413, "body_too_large", `body: larger than ${maxBytes} bytes after decompression`)
          : reject(request, 400, "invalid_request", `body: ${err instanceof ConnectError ? err.rawMessage : String(err)}`);
      }
    }
    if (!format.binary) continue;
    try {
      decoded.push(fromBinary(method.input, data));
    } catch (err) {
      return reject(request, 400, "invalid_request", `body: not a valid ${method.input.typeName}: ${(err as Error).message}`);
    }
  }
  return decoded.length === 1 && isOnePlainFrame(bytes, payloads) ? { bytes, message: decoded[0] } : { bytes };
}

/** The body is one uncompressed message frame and nothing else (no end-stream or trailer
 *  frames, whose meaning differs by protocol: connect-es judges those). */
function isOnePlainFrame(bytes: Uint8Array, payloads: { data: Uint8Array }[]): boolean {
  return payloads.length === 1 && bytes[0] === 0 && bytes.byteLength === 5 + payloads[0]!.data.byteLength;
}

/** The request's declared compression, if any ("identity" is none). */
function encodingOf(request: Request, format: WireFormat): string | undefined {
  const value = request.headers.get(format.encodingHeader)?.trim().toLowerCase();
  return value && value !== "identity" ? value : undefined;
}

/** The body, at most `limit` bytes; undefined when larger (the rest drained, within bounds). */
async function readBody(request: Request, limit: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array();
  try {
    return await readClientBody(request.body, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) return undefined;
    throw err;
  }
}

/** Flag bits a request envelope may carry: compressed (0x01) and end-stream (0x02 Connect,
 *  0x80 gRPC-web). Anything else means the bytes are not an envelope. */
const ENVELOPE_FLAGS = 0x01 | 0x02 | 0x80;

/** Splits enveloped messages (flags byte, 4-byte big-endian length); end-stream frames are
 *  skipped. Returns an error string for broken framing. */
export function unframe(bytes: Uint8Array): { data: Uint8Array; compressed: boolean }[] | string {
  const out: { data: Uint8Array; compressed: boolean }[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  while (off < bytes.length) {
    if (bytes.length - off < 5) return "truncated message envelope";
    const flags = bytes[off]!;
    if ((flags & ~ENVELOPE_FLAGS) !== 0) return `byte ${off} (0x${flags.toString(16).padStart(2, "0")}) is not an envelope's flags byte`;
    const len = view.getUint32(off + 1);
    if (off + 5 + len > bytes.length) return `message envelope announces ${len} bytes, ${bytes.length - off - 5} present`;
    if ((flags & 0x80) === 0 && (flags & 0x02) === 0) out.push({ data: bytes.subarray(off + 5, off + 5 + len), compressed: (flags & 0x01) !== 0 });
    off += 5 + len;
  }
  if (out.length === 0) return "no message";
  return out;
}
