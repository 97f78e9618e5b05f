// Rejections issued before a request reaches a surface (auth, limits, rate limiting), in the
// caller's own protocol: gRPC-web gets a trailers-only response, Connect a Connect error
// JSON, everything else the OpenAI error shape. All carry x-gateway-error-code.
import { Code } from "../core/grpc-code.js";
import { connectCodeForStatus } from "../core/errors.js";

const CONNECT_CODE_NAMES: Partial<Record<Code, string>> = {
  [Code.InvalidArgument]: "invalid_argument",
  [Code.Unauthenticated]: "unauthenticated",
  [Code.PermissionDenied]: "permission_denied",
  [Code.ResourceExhausted]: "resource_exhausted",
  [Code.NotFound]: "not_found",
  [Code.Unimplemented]: "unimplemented",
  [Code.Internal]: "internal",
};

export function reject(request: Request, status: number, code: string, message: string, extraHeaders: Record<string, string> = {}): Response {
  const contentType = request.headers.get("content-type") ?? "";
  const connectCode = connectCodeForStatus(status);
  const headers = { "x-gateway-error-code": code, ...extraHeaders };
  if (contentType.startsWith("application/grpc-web")) {
    return new Response(null, {
      status: 200,
      headers: { ...headers, "content-type": "application/grpc-web+proto", "grpc-status": String(connectCode), "grpc-message": encodeURIComponent(message) },
    });
  }
  if (contentType.startsWith("application/connect+")) {
    // Connect streaming: errors travel in the end-stream message of a 200 response.
    const json = new TextEncoder().encode(JSON.stringify({ error: { code: CONNECT_CODE_NAMES[connectCode] ?? "unknown", message } }));
    const frame = new Uint8Array(5 + json.length);
    frame[0] = 0x02;
    new DataView(frame.buffer).setUint32(1, json.length);
    frame.set(json, 5);
    return new Response(frame, { status: 200, headers: { ...headers, "content-type": contentType } });
  }
  if (new URL(request.url).pathname.startsWith("/vllm.grpc.engine.")) {
    return Response.json({ code: CONNECT_CODE_NAMES[connectCode] ?? "unknown", message }, { status, headers });
  }
  return Response.json({ error: { message, type: errorType(status), param: null, code } }, { status, headers });
}

function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  if (status === 413 || status === 431 || status === 400) return "invalid_request_error";
  return "server_error";
}
