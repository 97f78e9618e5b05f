// Every event's encoding against the documented v1 layout (docs/metrics.md), position by
// position: a moved blob or double breaks these tests before it breaks a dashboard.
import { describe, expect, it } from "vitest";
import { decodeDataPoint, encodeEvent, LAYOUTS } from "../../src/metrics/schema.js";
import type { GatewayEvent } from "../../src/metrics/events.js";
import { MAX_BLOBS, MAX_DOUBLES } from "../../src/metrics/limits.js";

const NaN_ = Number.NaN;

const cases: { event: GatewayEvent; blobs: string[]; doubles: number[] }[] = [
  {
    event: { type: "request", model: "m", surface: "engine", endpoint: "generate", backend: "pd", streaming: true, status: 200, durationMs: 40 },
    blobs: ["v1", "request", "engine", "generate", "pd", "true", ""],
    doubles: [200, 40],
  },
  {
    event: { type: "request", model: "m", surface: "openai", endpoint: "/v1/chat/completions", backend: "none", streaming: false, status: 499, errorCode: "client_cancelled", durationMs: 7 },
    blobs: ["v1", "request", "openai", "/v1/chat/completions", "none", "false", "client_cancelled"],
    doubles: [499, 7],
  },
  {
    event: { type: "pd_decision", model: "m", surface: "engine", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "p", decodeEngine: "d", prefillMs: 12.5, kvTransferMs: 3 },
    blobs: ["v1", "pd_decision", "engine", "nixl", "ran", "", "relayed", "p", "d", "measured", ""],
    doubles: [1, 12.5, 3],
  },
  {
    event: { type: "pd_decision", model: "m", surface: "openai", connectorMode: "nixl", prefill: "skipped", skipReason: "fanout", kvInjection: "none", n: 4, prefillEngine: "p", decodeEngine: "d" },
    blobs: ["v1", "pd_decision", "openai", "nixl", "skipped", "fanout", "none", "p", "d", "prefill_skipped", ""],
    doubles: [4, NaN_, NaN_],
  },
  {
    event: { type: "pd_decision", model: "m", surface: "engine", connectorMode: "passthrough", prefill: "ran", kvInjection: "none", n: 1, prefillEngine: "p", decodeEngine: "d", prefillMs: 9 },
    blobs: ["v1", "pd_decision", "engine", "passthrough", "ran", "", "none", "p", "d", "not_injected", ""],
    doubles: [1, 9, NaN_],
  },
  {
    // The HTTP executor injects params but times no transfer window.
    event: { type: "pd_decision", model: "m", surface: "openai", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "p", decodeEngine: "d", prefillMs: 9 },
    blobs: ["v1", "pd_decision", "openai", "nixl", "ran", "", "relayed", "p", "d", "not_measured", ""],
    doubles: [1, 9, NaN_],
  },
  {
    event: { type: "engine_outcome", model: "m", engine: "d", leg: "decode", status: 503 },
    blobs: ["v1", "engine_outcome", "d", "decode", "failure"],
    doubles: [503],
  },
  {
    event: { type: "engine_outcome", model: "m", engine: "p", leg: "prefill", status: 400 },
    blobs: ["v1", "engine_outcome", "p", "prefill", "success"],
    doubles: [400],
  },
  {
    event: { type: "kv_transfer_failure", model: "m", prefillEngine: "p" },
    blobs: ["v1", "kv_transfer_failure", "p"],
    doubles: [],
  },
  {
    event: { type: "stream_complete", model: "m", surface: "engine", endpoint: "generate", ttftMs: 5, tpotMs: 1.5, generationMs: 20, inputTokens: 11, outputTokens: 8 },
    blobs: ["v1", "stream_complete", "engine", "generate", "measured", "measured"],
    doubles: [5, 1.5, 20, 11, 8],
  },
  {
    event: { type: "stream_complete", model: "m", surface: "openai", endpoint: "/v1/chat/completions", ttftMs: 5, generationMs: 6, outputTokens: 1 },
    blobs: ["v1", "stream_complete", "openai", "/v1/chat/completions", "measured", "single_token"],
    doubles: [5, NaN_, 6, NaN_, 1],
  },
  {
    event: { type: "stream_complete", model: "m", surface: "openai", endpoint: "/v1/completions", generationMs: 6, outputTokens: 0 },
    blobs: ["v1", "stream_complete", "openai", "/v1/completions", "no_tokens", "no_tokens"],
    doubles: [NaN_, NaN_, 6, NaN_, 0],
  },
  {
    event: { type: "breaker_transition", model: "m", engine: "d", from: "closed", to: "open" },
    blobs: ["v1", "breaker_transition", "d", "closed", "open"],
    doubles: [],
  },
  {
    event: { type: "engine_selection", model: "m", engine: "p", leg: "prefill", policy: "power_of_two" },
    blobs: ["v1", "engine_selection", "p", "prefill", "power_of_two", ""],
    doubles: [],
  },
  {
    event: { type: "engine_selection", model: "m", engine: "p", leg: "prefill", policy: "round_robin", cluster: "eu-west" },
    blobs: ["v1", "engine_selection", "p", "prefill", "round_robin", "eu-west"],
    doubles: [],
  },
  {
    event: { type: "pd_decision", model: "m", surface: "engine", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "p", decodeEngine: "d", prefillMs: 2, kvTransferMs: 1, cluster: "us-east" },
    blobs: ["v1", "pd_decision", "engine", "nixl", "ran", "", "relayed", "p", "d", "measured", "us-east"],
    doubles: [1, 2, 1],
  },
];

describe("Analytics Engine encoding (schema v1)", () => {
  it.each(cases.map((c) => [`${c.event.type} ${c.blobs.slice(2).join("/")}`, c] as const))("%s -> documented positions", (_n, c) => {
    const p = encodeEvent(c.event);
    expect(p.indexes).toEqual(["m"]);
    expect(p.blobs).toEqual(c.blobs);
    expect(p.doubles).toEqual(c.doubles);
  });

  it.each(cases.map((c) => [c.event.type, c.event] as const))("%s round-trips through decodeDataPoint", (_t, e) => {
    expect(decodeDataPoint(encodeEvent(e))).toEqual(e);
  });

  it("every event type has a case here", () => {
    expect(new Set(cases.map((c) => c.event.type))).toEqual(new Set(Object.keys(LAYOUTS)));
  });

  it("a duration that did not happen is NaN, never 0", () => {
    const skipped = encodeEvent(cases[3]!.event);
    expect(skipped.doubles!.slice(1).every((d) => Number.isNaN(d))).toBe(true);
    expect(skipped.doubles).not.toContain(0);
  });

  it("layouts fit the blob and double counts (2 blobs are version and type)", () => {
    for (const layout of Object.values(LAYOUTS)) {
      expect(layout.blobs.length + 2).toBeLessThanOrEqual(MAX_BLOBS);
      expect(layout.doubles.length).toBeLessThanOrEqual(MAX_DOUBLES);
    }
  });

  it("decodeDataPoint rejects points of another schema version", () => {
    expect(() => decodeDataPoint({ indexes: ["m"], blobs: ["v0", "request"], doubles: [] })).toThrow(/not a v1 data point/);
    expect(() => decodeDataPoint({ indexes: ["m"], blobs: ["v1", "nope"], doubles: [] })).toThrow(/not a v1 data point/);
  });

  it("only declared boolean fields decode as booleans", () => {
    const e: GatewayEvent = { type: "engine_outcome", model: "m", engine: "true", leg: "decode", status: 200 };
    expect(decodeDataPoint(encodeEvent(e))).toEqual(e);
  });
});
