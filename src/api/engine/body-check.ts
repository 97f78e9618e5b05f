// Protobuf bodies are checked before Connect sees them: connect-es reports an unparsable
// binary message as Internal, but a malformed body is the client's mistake, so it gets
// InvalidArgument (400) naming the body. JSON bodies are left to Connect (it already answers
// InvalidArgument). The body is read once, bounded by the configured limit, and handed on.
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import { VllmEngine } from "../../gen/vllm_engine_pb.js";
import { reject } from "../../middleware/rejection.js";

const methodsByName = new Map<string, DescMethod>(VllmEngine.methods.map((m) => [m.name, m]));

export async function checkProtoBody(request: Request, maxBytes: number): Promise<Request | Response> {
  const contentType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const enveloped = contentType === "application/connect+proto" || contentType === "application/grpc-web" || contentType === "application/grpc-web+proto";
  if (!enveloped && contentType !== "application/proto") return request;
  const method = methodsByName.get(new URL(request.url).pathname.split("/").pop() ?? "");
  if (!method) return request;
  const bytes = await readBounded(request, maxBytes);
  if (bytes === undefined) return reject(request, 413, "body_too_large", `body: larger than ${maxBytes} bytes`);
  const payloads = enveloped ? unframe(bytes) : [{ data: bytes, compressed: false }];
  if (typeof payloads === "string") return reject(request, 400, "invalid_request", `body: ${payloads}`);
  const encoded = request.headers.get("connect-content-encoding") ?? request.headers.get("grpc-encoding") ?? request.headers.get("content-encoding");
  for (const p of payloads) {
    if (p.compressed) {
      if (!encoded || encoded === "identity") return reject(request, 400, "invalid_request", "body: a message is flagged compressed but no encoding was declared");
      continue; // Connect decompresses and parses it
    }
    try {
      fromBinary(method.input, p.data);
    } catch (err) {
      return reject(request, 400, "invalid_request", `body: not a valid ${method.input.typeName}: ${(err as Error).message}`);
    }
  }
  return new Request(request.url, { method: request.method, headers: request.headers, body: bytes, signal: request.signal });
}

async function readBounded(request: Request, maxBytes: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes + 5) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/** Splits enveloped messages (flags byte, 4-byte big-endian length); end-stream frames are
 *  skipped. Returns an error string for broken framing. */
export function unframe(bytes: Uint8Array): { data: Uint8Array; compressed: boolean }[] | string {
  const out: { data: Uint8Array; compressed: boolean }[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  while (off < bytes.length) {
    if (bytes.length - off < 5) return "truncated message envelope";
    const flags = bytes[off]!;
    const len = view.getUint32(off + 1);
    if (off + 5 + len > bytes.length) return `message envelope announces ${len} bytes, ${bytes.length - off - 5} present`;
    if ((flags & 0x80) === 0 && (flags & 0x02) === 0) out.push({ data: bytes.subarray(off + 5, off + 5 + len), compressed: (flags & 0x01) !== 0 });
    off += 5 + len;
  }
  if (out.length === 0) return "no message";
  return out;
}
