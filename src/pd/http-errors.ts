// How the HTTP legs' failures become gateway errors (pd-reference 6): which message to show
// from an engine's error body and which stable code and status each engine status maps to.
// Pure, except for the error classes.
import { GatewayError } from "./errors.js";

/** An engine answered with an error status. Streaming requests render these as one SSE error
 *  event (the client asked for an event stream); everything else is a plain JSON error. */
export class UpstreamStatusError extends GatewayError {
  override name = "UpstreamStatusError";
}

const MAX_MESSAGE_CHARS = 2_000;

/** An engine error body's message: error.message, else message, else the raw text. */
export function upstreamErrorMessage(text: string): string {
  let msg: string | undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === "object" && v !== null) {
      const o = v as { error?: unknown; message?: unknown };
      const inner = typeof o.error === "object" && o.error !== null ? (o.error as { message?: unknown }).message : undefined;
      if (typeof inner === "string") msg = inner;
      else if (typeof o.message === "string") msg = o.message;
      // vLLM < 0.6 and some proxies answer {"error": "text"}.
      else if (typeof o.error === "string") msg = o.error;
    }
  } catch {
    // not JSON: the raw body is the message
  }
  msg ??= text.trim() === "" ? "(empty body)" : text.trim();
  return msg.length > MAX_MESSAGE_CHARS ? `${msg.slice(0, MAX_MESSAGE_CHARS)}…` : msg;
}

/** The status the client gets for an engine status passed through: the engine's own error
 *  status, except that a redirect or other non-error (never followed) counts as a bad gateway. */
export function passedThroughStatus(status: number): number {
  return status >= 400 && status <= 599 ? status : 502;
}

/** Code and status for a decode (or aggregated engine) leg's error status. */
export function legStatusError(prefix: "decode" | "engine", status: number): { code: string; status: number } {
  switch (status) {
    case 400:
      return { code: `${prefix}_bad_request`, status };
    case 404:
      return { code: `${prefix}_not_found`, status };
    case 500:
      return { code: `${prefix}_internal_error`, status };
    case 502:
      return { code: `${prefix}_bad_gateway`, status };
    case 503:
      return { code: `${prefix}_unavailable`, status };
    default:
      return { code: `${prefix}_error`, status: 500 };
  }
}

/** The OpenAI error `type` for a status (the SDKs key off the status; this is for humans). */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status === 499) return "client_cancelled";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** A failure's message without stack or class noise. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
