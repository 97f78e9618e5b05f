// The Anthropic Messages error shape {"type":"error","error":{"type","message"}} (Anthropic's
// "HTTP errors" page), as JSON or as the `error` event of a stream. The stable gateway code
// goes in the x-gateway-error-code header, as in every protocol. Statuses are Anthropic's: a
// 503 (no engine can take the request now) is its 529 overloaded_error, which its SDKs retry.
import type { GatewayError } from "../core/errors.js";
import { ERROR_CODE_HEADER } from "./header.js";

function anthropicErrorBody(err: GatewayError) {
  return { type: "error", error: { type: anthropicErrorType(err.status), message: err.message } };
}

function anthropicStatus(status: number): number {
  return status === 503 ? 529 : status;
}

export function anthropicErrorResponse(err: GatewayError, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  h.set(ERROR_CODE_HEADER, err.code);
  return new Response(JSON.stringify(anthropicErrorBody(err)), { status: anthropicStatus(err.status), headers: h });
}

/** The `error` event that ends a stream whose head was already sent. */
export function anthropicErrorEvent(err: GatewayError): string {
  return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(err))}\n\n`;
}

function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}
