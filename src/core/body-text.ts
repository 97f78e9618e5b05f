// A client's request body as UTF-8 text, at most `maxBytes` whether or not content-length
// says so (the OpenAI surface, the admin API). Every refusal is a GatewayError: 413
// body_too_large, 400 invalid_body (the stream failed), 400 invalid_json (not UTF-8).
import { BodyTooLargeError, readClientBody } from "./body.js";
import { GatewayError } from "./errors.js";

function tooLarge(limit: number): GatewayError {
  // Same code as the declared-length check in middleware/limits.ts, which runs first.
  return new GatewayError("body_too_large", 413, `body: larger than the limit of ${limit} bytes`);
}

// Reusable: a fatal decoder keeps no state between whole (non-streamed) decodes.
let utf8: TextDecoder | undefined;

/** The body as text, refusing more than `maxBytes` whether or not content-length says so. */
export async function readBodyText(req: Request, maxBytes: number): Promise<string> {
  const declared = req.headers.get("content-length");
  const length = declared === null ? Number.NaN : declaredLength(declared);
  if (length > maxBytes) throw tooLarge(maxBytes);
  if (!req.body) return "";
  let bytes: Uint8Array;
  try {
    // With a declared length the runtime bounds the body to it: read it in one native call.
    bytes = Number.isNaN(length) ? await readClientBody(req.body, maxBytes) : new Uint8Array(await req.arrayBuffer());
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw tooLarge(maxBytes);
    throw new GatewayError("invalid_body", 400, "request body could not be read");
  }
  if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
  try {
    return (utf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })).decode(bytes);
  } catch {
    throw new GatewayError("invalid_json", 400, "request body is not valid UTF-8");
  }
}

/** content-length as a number; NaN when it is not a plain decimal. */
function declaredLength(v: string): number {
  const t = v.trim();
  return /^\d+$/.test(t) ? Number(t) : Number.NaN;
}
