// Helpers for talking to a vLLM OpenAI server (`vllm serve`): where a route lives, which
// headers cross in each direction, and what an error body says.
import { traceContextHeaders } from "./trace-context.js";

/** Engine base URL + route. A base that already ends in /v1 (as OpenAI base URLs do) is not
 *  doubled; any other path prefix (a proxy mount) is kept. */
export function engineRouteUrl(base: string, route: string): string {
  let b = base.replace(/\/+$/, "");
  if (b.endsWith("/v1") && route.startsWith("/v1/")) b = b.slice(0, -3);
  return `${b}${route}`;
}

/** Headers never relayed from an engine response: hop-by-hop ones, and content-encoding /
 *  content-length, because workerd hands us the body decompressed. */
const DROPPED_RESPONSE_HEADERS = [
  "content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive",
  "proxy-connection", "upgrade", "trailer", "te",
];

export function relayResponseHeaders(upstream: Headers | undefined): Headers {
  const out = new Headers(upstream);
  for (const h of DROPPED_RESPONSE_HEADERS) out.delete(h);
  return out;
}

/** The headers of an engine request. Of the client's, an engine sees only its trace context
 *  (when valid: trace-context.ts); the rest stay at the gateway, notably Authorization, which
 *  is the gateway's credential, not the engine's. */
export function engineRequestHeaders(client: Headers, requestId: string, stream: boolean): Headers {
  const h = new Headers({
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-request-id": requestId,
  });
  for (const [name, value] of traceContextHeaders(client)) h.set(name, value);
  return h;
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
