// Which trace headers reach an engine (issue 32): a valid W3C traceparent and what rides on it;
// an invalid one (an 8 KB header of junk) is dropped, and its tracestate with it.
import { describe, expect, it } from "vitest";
import { traceContextHeaders, validTraceparent } from "../../../src/backends/trace-context.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${PARENT}-01`;

describe("validTraceparent", () => {
  it.each([
    [VALID, true],
    [`00-${TRACE}-${PARENT}-00`, true],
    [`01-${TRACE}-${PARENT}-09`, true], // a later version of the same shape
    [`ff-${TRACE}-${PARENT}-01`, false], // version ff is invalid
    [`00-${"0".repeat(32)}-${PARENT}-01`, false], // all-zero trace id
    [`00-${TRACE}-${"0".repeat(16)}-01`, false], // all-zero parent id
    [`00-${TRACE.toUpperCase()}-${PARENT}-01`, false], // upper-case hex
    [`00-${TRACE}-${PARENT}-01-extra`, false],
    [`00-${TRACE}-${PARENT}-1`, false],
    [`00-${TRACE.slice(1)}-${PARENT}-01`, false],
    [`0x-${TRACE}-${PARENT}-01`, false],
    [` ${VALID}`, false],
    ["00-a-b-01", false],
    ["", false],
    ["x".repeat(8192), false],
  ])("%s -> %s", (v, ok) => {
    expect(validTraceparent(v)).toBe(ok);
  });
});

describe("traceContextHeaders", () => {
  const forwarded = (h: Record<string, string>) => Object.fromEntries(traceContextHeaders(new Headers(h)));
  it.each([
    ["valid, with state and baggage", { traceparent: VALID, tracestate: "congo=t61rcWkgMzE", baggage: "k=v" }, { traceparent: VALID, tracestate: "congo=t61rcWkgMzE", baggage: "k=v" }],
    ["invalid: dropped, and its tracestate", { traceparent: "x".repeat(8192), tracestate: "congo=t61rcWkgMzE", baggage: "k=v" }, { baggage: "k=v" }],
    ["tracestate without traceparent", { tracestate: "congo=t61rcWkgMzE" }, {}],
    ["tracestate beyond 512 characters", { traceparent: VALID, tracestate: "a=".padEnd(513, "b") }, { traceparent: VALID }],
    ["baggage beyond 8192 bytes", { baggage: "k=".padEnd(8193, "v") }, {}],
    ["none", { authorization: "Bearer k" }, {}],
  ])("%s", (_name, client, expected) => {
    expect(forwarded(client)).toEqual(expected);
  });
});
