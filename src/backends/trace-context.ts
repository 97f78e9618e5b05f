// The W3C trace context a client's request carries on to an engine (issue 32): a traceparent
// is forwarded only when it is one (version-traceid-parentid-flags, lower-case hex, 55
// characters, neither id all zeros, version not ff), and tracestate only beside a valid one,
// as the spec asks of a vendor that cannot parse traceparent; baggage only within the spec's
// 8192 bytes. Anything else is dropped, not forwarded: an 8 KB header of junk once was. Pure.

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_PARENT_ID = "0".repeat(16);
/** W3C tracestate: at most 32 list members; vendors keep at least 512 characters of it. */
const MAX_TRACESTATE_CHARS = 512;
/** W3C baggage: at most 8192 bytes in all. */
const MAX_BAGGAGE_CHARS = 8192;

export function validTraceparent(v: string): boolean {
  const m = TRACEPARENT.exec(v);
  return m !== null && m[1] !== "ff" && m[2] !== ZERO_TRACE_ID && m[3] !== ZERO_PARENT_ID;
}

/** The trace headers to forward, from the client's. */
export function traceContextHeaders(client: Headers): [string, string][] {
  const out: [string, string][] = [];
  const parent = client.get("traceparent");
  if (parent !== null && validTraceparent(parent)) {
    out.push(["traceparent", parent]);
    const state = client.get("tracestate");
    if (state !== null && state.length <= MAX_TRACESTATE_CHARS) out.push(["tracestate", state]);
  }
  const baggage = client.get("baggage");
  if (baggage !== null && baggage.length <= MAX_BAGGAGE_CHARS) out.push(["baggage", baggage]);
  return out;
}
