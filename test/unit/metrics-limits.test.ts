// The Analytics Engine limits: a 96-byte index, 16 KB of blobs per point, measured in UTF-8
// bytes. Over-long values are cut to fit, never dropped and never thrown.
import { describe, expect, it } from "vitest";
import { utf8Length } from "../../src/core/utf8.js";
import { fitBlobs, MAX_BLOB_BYTES_TOTAL, MAX_INDEX_BYTES, TRUNCATION_MARK, truncateUtf8 } from "../../src/metrics/limits.js";
import { decodeDataPoint, encodeEvent } from "../../src/metrics/schema.js";

const bytes = (s: string) => new TextEncoder().encode(s).length;

describe("utf8Length", () => {
  it.each(["", "abc", "é", "模型", "🙂", "a🙂b模", "\ud800 lone surrogate"])("matches TextEncoder for %j", (s) => {
    expect(utf8Length(s)).toBe(bytes(s));
  });
});

describe("truncateUtf8", () => {
  it("leaves a value that fits alone", () => {
    expect(truncateUtf8("a".repeat(96), 96)).toBe("a".repeat(96));
    expect(truncateUtf8("模".repeat(32), 96)).toBe("模".repeat(32)); // 96 bytes exactly
  });
  it("cuts by bytes, not characters, and marks the cut", () => {
    const s = truncateUtf8("模".repeat(40), 96); // 120 bytes
    expect(bytes(s)).toBeLessThanOrEqual(96);
    expect(s).toBe("模".repeat(31) + TRUNCATION_MARK); // 93 + 3 bytes
  });
  it("never splits a code point (no replacement characters)", () => {
    for (let max = 3; max < 20; max++) {
      const s = truncateUtf8("a🙂b🙂c🙂d🙂e🙂", max);
      expect(bytes(s)).toBeLessThanOrEqual(max);
      expect(s).not.toContain("\ufffd");
      expect(s.endsWith(TRUNCATION_MARK)).toBe(true);
    }
  });
  it("drops the mark when not even it fits", () => {
    expect(truncateUtf8("abcdef", 2)).toBe("ab");
  });
});

describe("fitBlobs", () => {
  it("returns blobs within the budget unchanged", () => {
    const blobs = ["v1", "request", "x".repeat(1000)];
    expect(fitBlobs(blobs)).toBe(blobs);
  });
  it("cuts only the longest blobs, to the largest cap that fits", () => {
    const blobs = ["v1", "engine_outcome", "e".repeat(20_000), "decode", "f".repeat(9_000)];
    const out = fitBlobs(blobs);
    expect(out.slice(0, 2)).toEqual(["v1", "engine_outcome"]);
    expect(out[3]).toBe("decode");
    const total = out.reduce((n, b) => n + bytes(b), 0);
    expect(total).toBeLessThanOrEqual(MAX_BLOB_BYTES_TOTAL);
    expect(total).toBeGreaterThan(MAX_BLOB_BYTES_TOTAL - 10); // the budget is used, not wasted
    expect(bytes(out[2]!)).toBe(bytes(out[4]!)); // both long ones share the room equally
    expect(out[2]!.endsWith(TRUNCATION_MARK)).toBe(true);
  });
  it("keeps a medium blob whole when only one is huge", () => {
    const out = fitBlobs(["v1", "x", "m".repeat(3_000), "h".repeat(50_000)]);
    expect(out[2]).toBe("m".repeat(3_000));
    expect(bytes(out.join(""))).toBeLessThanOrEqual(MAX_BLOB_BYTES_TOTAL);
  });
  it("holds for multi-byte text", () => {
    const out = fitBlobs(["v1", "x", "模".repeat(4_000), "🙂".repeat(4_000)]);
    expect(out.reduce((n, b) => n + bytes(b), 0)).toBeLessThanOrEqual(MAX_BLOB_BYTES_TOTAL);
    expect(out.join("")).not.toContain("\ufffd");
  });
});

describe("encodeEvent within the limits", () => {
  it("a long model name is cut to fit the 96-byte index (UTF-8 bytes) and the point still written", () => {
    const model = "organisation/" + "很长的模型名称".repeat(10);
    const p = encodeEvent({ type: "kv_transfer_failure", model, prefillEngine: "p" });
    expect(bytes(p.indexes![0] as string)).toBeLessThanOrEqual(MAX_INDEX_BYTES);
    expect(model.startsWith((p.indexes![0] as string).slice(0, -1))).toBe(true);
    expect(p.blobs).toEqual(["v1", "kv_transfer_failure", "p"]);
  });

  it("a huge error code and engine names are cut so the blobs total <= 16 KB; nothing else moves", () => {
    const errorCode = "e".repeat(40_000);
    const p = encodeEvent({ type: "request", model: "m", surface: "openai", endpoint: "/v1/chat/completions", backend: "pd", streaming: true, status: 502, errorCode, durationMs: 3 });
    const blobs = p.blobs as string[];
    expect(blobs.reduce((n, b) => n + bytes(b), 0)).toBeLessThanOrEqual(MAX_BLOB_BYTES_TOTAL);
    expect(blobs.slice(0, 6)).toEqual(["v1", "request", "openai", "/v1/chat/completions", "pd", "true"]);
    expect(blobs[6]!.startsWith("eeee")).toBe(true);
    expect(p.doubles).toEqual([502, 3]);
    expect(decodeDataPoint(p)).toMatchObject({ type: "request", status: 502, streaming: true });

    const q = encodeEvent({ type: "pd_decision", model: "m", surface: "engine", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "p".repeat(12_000), decodeEngine: "d".repeat(12_000), prefillMs: 1, kvTransferMs: 2 });
    const qb = q.blobs as string[];
    expect(qb.reduce((n, b) => n + bytes(b), 0)).toBeLessThanOrEqual(MAX_BLOB_BYTES_TOTAL);
    expect(qb[9]).toBe("measured");
    expect(q.doubles).toEqual([1, 1, 2]);
  });
});
