// Which error shape a request's client reads, from what the request itself says (no route
// needed, so a 404, a refused body or a broken config answers in the caller's own protocol):
// gRPC-web and Connect streaming by content type, Connect unary by the VllmEngine path or its
// protocol header, the Anthropic Messages paths Anthropic's shape, everything else the OpenAI
// shape.

export type ErrorProtocol = "openai" | "anthropic" | "connect" | "connect-stream" | "grpc-web";

/** The path prefix of the gateway's gRPC services (the VllmEngine surface). */
const GRPC_PATH_PREFIX = "/vllm.grpc.";

export function errorProtocolOf(request: Request): ErrorProtocol {
  const contentType = (request.headers.get("content-type") ?? "").toLowerCase();
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/connect+")) return "connect-stream";
  if (request.headers.has("connect-protocol-version") || contentType.startsWith("application/proto")) return "connect";
  const path = new URL(request.url).pathname;
  if (path.startsWith(GRPC_PATH_PREFIX)) return "connect";
  return path === "/v1/messages" || path.startsWith("/v1/messages/") ? "anthropic" : "openai";
}
