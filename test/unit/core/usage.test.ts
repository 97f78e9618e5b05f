// The one usage accumulator: the upstream servicer's DELTA / FINAL_ONLY counts, summed per
// index when streamed, taken from the complete when not, and cut at a gateway-matched stop.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { UsageAccumulator, usageFrameOf, type UsageFrame } from "../../../src/core/usage.js";
import { GenerateResponseSchema } from "../../../src/gen/vllm_engine_pb.js";

const P = 20; // prompt tokens
const chunk = (index: number, tokens = 1, cachedTokens = 0): UsageFrame => ({ kind: "chunk", index, tokens, promptTokens: P, cachedTokens });
const complete = (index: number, completionTokens: number, cachedTokens = 0): UsageFrame => ({ kind: "complete", index, completionTokens, promptTokens: P, cachedTokens });
const times = (n: number, f: () => UsageFrame) => Array.from({ length: n }, f);
type Step = UsageFrame | { stopAt: number; tokens: number };

describe("UsageAccumulator", () => {
  it.each<[string, boolean, Step[], number, Record<number, number>?]>([
    ["streamed: 14 one-token chunks, then a complete that repeats the last delta (1)", true, [...times(14, () => chunk(0)), complete(0, 1)], 14],
    ["streamed: multi-token chunks add their sizes", true, [chunk(0, 3), chunk(0, 2), complete(0, 2)], 5],
    ["streamed: n=2 interleaved, counted per index", true, [chunk(0), chunk(1), chunk(0), chunk(1), chunk(1), complete(0, 1), complete(1, 1)], 5, { 0: 2, 1: 3 }],
    ["streamed: the complete's count is never added (not 14 + 1)", true, [...times(14, () => chunk(0)), complete(0, 14)], 14],
    ["streamed: an abort complete with no chunks counts 0", true, [complete(0, 0)], 0],
    ["non-streamed: the complete carries every token", false, [complete(0, 12)], 12],
    ["non-streamed: n=2, one complete per index", false, [complete(0, 3), complete(1, 4)], 7, { 0: 3, 1: 4 }],
    ["non-streamed: stray chunks do not count", false, [chunk(0, 5), complete(0, 12)], 12],
    ["streamed stop at the 8th token: later chunks do not count", true, [...times(8, () => chunk(0)), { stopAt: 0, tokens: 8 }, ...times(4, () => chunk(0)), complete(0, 1)], 8],
    ["non-streamed stop at the 8th of 12 tokens: 8, as streamed", false, [complete(0, 12), { stopAt: 0, tokens: 8 }], 8],
    ["a stop settles once: a second stopAt does not move it", true, [...times(3, () => chunk(0)), { stopAt: 0, tokens: 3 }, { stopAt: 0, tokens: 5 }], 3],
    ["a stop on one index leaves the others counting", true, [chunk(0), chunk(1), { stopAt: 0, tokens: 1 }, chunk(0), chunk(1)], 3, { 0: 1, 1: 2 }],
  ])("%s", (_name, streamed, steps, total, perIndex) => {
    const acc = new UsageAccumulator(streamed);
    for (const s of steps) {
      if ("stopAt" in s) acc.stopAt(s.stopAt, s.tokens);
      else acc.add(s);
    }
    expect(acc.usage()).toEqual({ promptTokens: P, completionTokens: total, cachedTokens: 0 });
    for (const [i, n] of Object.entries(perIndex ?? {})) expect(acc.completionTokensOf(Number(i))).toBe(n);
  });

  it("prompt and cached tokens are whole-request values (not summed over frames or indexes)", () => {
    const acc = new UsageAccumulator(true);
    for (const f of [chunk(0, 1, 16), chunk(1, 1, 16), chunk(0, 1, 16), complete(0, 1, 16)]) acc.add(f);
    expect(acc.usage()).toEqual({ promptTokens: P, completionTokens: 3, cachedTokens: 16 });
  });

  it("an accumulator that saw nothing reports zeros", () => {
    expect(new UsageAccumulator(true).usage()).toEqual({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 });
  });
});

describe("usageFrameOf (GenerateResponse)", () => {
  it.each([
    ["a chunk counts the tokens it carries", { case: "chunk" as const, value: { tokenIds: [5, 6, 7], completionTokens: 3, promptTokens: 9, cachedTokens: 4, index: 1 } },
      { kind: "chunk", index: 1, tokens: 3, promptTokens: 9, cachedTokens: 4 }],
    ["a complete reports its completion_tokens", { case: "complete" as const, value: { outputIds: [1], completionTokens: 1, promptTokens: 9, cachedTokens: 0, index: 0 } },
      { kind: "complete", index: 0, completionTokens: 1, promptTokens: 9, cachedTokens: 0 }],
    ["a complete without a count falls back to its output ids", { case: "complete" as const, value: { outputIds: [1, 2], completionTokens: 0, promptTokens: 9, cachedTokens: 0, index: 0 } },
      { kind: "complete", index: 0, completionTokens: 2, promptTokens: 9, cachedTokens: 0 }],
  ])("%s", (_name, response, expected) => {
    expect(usageFrameOf(create(GenerateResponseSchema, { response }))).toEqual(expected);
  });
  it("an empty response reports nothing", () => {
    expect(usageFrameOf(create(GenerateResponseSchema, {}))).toBeUndefined();
  });
});
