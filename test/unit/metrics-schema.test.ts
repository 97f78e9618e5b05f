import { describe, expect, it } from "vitest";
import { decodeDataPoint, encodeEvent, LAYOUTS } from "../../src/metrics/schema.js";
import type { GatewayEvent } from "../../src/metrics/events.js";

const events: GatewayEvent[] = [
  { type: "pd_decision", model: "m", surface: "engine", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "p", decodeEngine: "d", prefillMs: 12.5, kvTransferMs: 3 },
  { type: "pd_decision", model: "m", surface: "openai", connectorMode: "nixl", prefill: "skipped", skipReason: "fanout", kvInjection: "none", n: 4, prefillEngine: "p", decodeEngine: "d" },
  { type: "engine_outcome", model: "m", engine: "d", leg: "decode", status: 503 },
  { type: "kv_transfer_failure", model: "m", prefillEngine: "p" },
  { type: "request", model: "m", surface: "engine", endpoint: "generate", backend: "pd", streaming: true, status: 200, durationMs: 40 },
];

describe("Analytics Engine encoding", () => {
  it.each(events)("round-trips $type", (e) => {
    expect(decodeDataPoint(encodeEvent(e))).toEqual(e);
  });
  it("a skipped prefill writes NaN, never 0, for the durations", () => {
    const p = encodeEvent(events[1]!);
    expect(p.doubles).toEqual([4, Number.NaN, Number.NaN]);
    expect(p.blobs?.slice(0, 2)).toEqual(["v1", "pd_decision"]);
    expect(p.indexes).toEqual(["m"]);
  });
  it("stays within the Analytics Engine limits", () => {
    for (const layout of Object.values(LAYOUTS)) {
      expect(layout.blobs.length + 2).toBeLessThanOrEqual(20);
      expect(layout.doubles.length).toBeLessThanOrEqual(20);
    }
  });
});
