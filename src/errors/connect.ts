// Connect and gRPC-web error responses for failures answered before (or instead of) Connect's
// own handlers: a Connect unary error JSON, a Connect streaming end-of-stream message, a
// gRPC-web trailers-only response. The Connect code is the error's (the code table in
// core/error-codes.ts). Plain objects here, not connect-es: these load on every request.
import type { GatewayError } from "../core/errors.js";
import { Code } from "../core/grpc-code.js";
import { ERROR_CODE_HEADER } from "./header.js";

/** The Connect protocol's names of the codes (connect-es's codeToString). */
export function connectCodeName(code: Code): string {
  return (Code[code] ?? "Unknown").replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}

/** Connect unary: the error JSON, with the gateway's HTTP status (clients read the code). */
export function connectErrorResponse(err: GatewayError, headers?: HeadersInit): Response {
  const h = withCode(headers, err);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify({ code: connectCodeName(err.connectCode), message: err.message }), { status: err.status, headers: h });
}

/** Connect streaming: errors travel in the end-of-stream message of a 200 response (the stable
 *  code is in the headers, which a client merges into the error's metadata). */
export function connectStreamErrorResponse(err: GatewayError, contentType: string, headers?: HeadersInit): Response {
  const json = new TextEncoder().encode(JSON.stringify({ error: { code: connectCodeName(err.connectCode), message: err.message } }));
  const frame = new Uint8Array(5 + json.length);
  frame[0] = 0x02; // end-stream flag
  new DataView(frame.buffer).setUint32(1, json.length);
  frame.set(json, 5);
  const h = withCode(headers, err);
  h.set("content-type", contentType);
  return new Response(frame, { status: 200, headers: h });
}

/** gRPC-web: a trailers-only response, the status in the headers of a 200. */
export function grpcWebErrorResponse(err: GatewayError, contentType: string, headers?: HeadersInit): Response {
  const h = withCode(headers, err);
  h.set("content-type", contentType);
  h.set("grpc-status", String(err.connectCode));
  h.set("grpc-message", encodeURIComponent(err.message));
  return new Response(null, { status: 200, headers: h });
}

function withCode(headers: HeadersInit | undefined, err: GatewayError): Headers {
  const h = new Headers(headers);
  h.set(ERROR_CODE_HEADER, err.code);
  return h;
}
