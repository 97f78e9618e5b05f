// The OpenAI error shape {"error":{"message","type","param","code"}} with the stable gateway
// code in `code` and in the `x-gateway-error-code` header, as JSON or as one SSE event.
import type { GatewayError } from "../core/errors.js";
import { ERROR_CODE_HEADER } from "./header.js";

function openAiErrorBody(err: GatewayError) {
  return { error: { message: err.message, type: openAiErrorType(err.status), param: err.param ?? null, code: err.code } };
}

export function openAiErrorResponse(err: GatewayError, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  h.set(ERROR_CODE_HEADER, err.code);
  return new Response(JSON.stringify(openAiErrorBody(err)), { status: err.status, headers: h });
}

export function sseErrorEvent(err: GatewayError): string {
  return `data: ${JSON.stringify(openAiErrorBody(err))}\n\n`;
}

/** A streaming request whose engine answered with an error status: one SSE error event with
 *  that status (pd-reference 6), so a client reading events sees the error as an event. */
export function sseErrorResponse(err: GatewayError, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "text/event-stream");
  h.set("cache-control", "no-cache");
  h.set(ERROR_CODE_HEADER, err.code);
  return new Response(sseErrorEvent(err), { status: err.status, headers: h });
}

/** The OpenAI error `type` for a status (the SDKs key off the status; this is for humans).
 *  A 404 is the caller's (an unknown route or model), as OpenAI's own API answers it. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status === 499) return "client_cancelled";
  return status >= 500 ? "server_error" : "invalid_request_error";
}
