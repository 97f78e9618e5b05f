// The one way a failure becomes a response outside a surface's own stream: in the caller's
// protocol (protocol.ts), with its stable code, status and `param` kept. Middleware, the 404
// handler, onError, the config check and admin all answer through here.
import { GatewayError } from "../core/errors.js";
import { connectErrorResponse, connectStreamErrorResponse, grpcWebErrorResponse } from "./connect.js";
import { anthropicErrorResponse } from "./anthropic.js";
import { openAiErrorResponse } from "./openai.js";
import { errorProtocolOf } from "./protocol.js";

export function renderError(request: Request, err: GatewayError, headers?: HeadersInit): Response {
  const protocol = errorProtocolOf(request);
  const contentType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  switch (protocol) {
    case "grpc-web":
      return grpcWebErrorResponse(err, contentType, headers);
    case "connect-stream":
      return connectStreamErrorResponse(err, contentType, headers);
    case "connect":
      return connectErrorResponse(err, headers);
    case "anthropic":
      return anthropicErrorResponse(err, headers);
    case "openai":
      return openAiErrorResponse(err, headers);
  }
}

/** Anything that is not a GatewayError is a gateway bug: logged, answered as a 500 with no
 *  internals in the message. */
export function toGatewayError(err: unknown, where = "gateway"): GatewayError {
  if (err instanceof GatewayError) return err;
  console.error(JSON.stringify({ msg: `unexpected error (${where})`, error: String(err), stack: (err as Error)?.stack }));
  return new GatewayError("internal_error", 500, "internal gateway error");
}

/** A refusal raised before a surface runs (auth, limits, rate limiting, routing). */
export function reject(request: Request, status: number, code: string, message: string, headers?: HeadersInit): Response {
  return renderError(request, new GatewayError(code, status, message), headers);
}
