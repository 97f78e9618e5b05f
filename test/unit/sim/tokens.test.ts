import { describe, expect, it } from "vitest";
import { detokenize, naturalLength, outputTokenIds, tokenize } from "../../../sim/tokens.js";

describe("sim tokens", () => {
  it("tokenizes words to stable ids in [100, 50000)", () => {
    const ids = tokenize("  the quick\tbrown\nfox the ");
    expect(ids).toHaveLength(5);
    expect(ids[0]).toBe(ids[4]);
    expect(ids).toEqual(tokenize("the quick brown fox the"));
    for (const id of ids) {
      expect(id).toBeGreaterThanOrEqual(100);
      expect(id).toBeLessThan(50_000);
    }
    expect(tokenize("")).toEqual([]);
  });

  it("detokenizes to lowercase words with a leading space each", () => {
    const text = detokenize([100, 101, 356]);
    expect(text).toMatch(/^( [a-z]+){3}$/);
    // The vocabulary has 256 words: ids 256 apart map to the same word.
    expect(detokenize([100])).toBe(detokenize([356]));
    expect(detokenize([100])).not.toBe(detokenize([101]));
    expect(detokenize([])).toBe("");
  });

  it("samples deterministically from prompt, seed, index and position", () => {
    const p = tokenize("hello sim");
    const a = outputTokenIds(p, undefined, 0, 10);
    expect(a).toEqual(outputTokenIds(p, 0, 0, 10));
    expect(outputTokenIds(p, undefined, 0, 4)).toEqual(a.slice(0, 4));
    expect(outputTokenIds(p, 7, 0, 10)).not.toEqual(a);
    expect(outputTokenIds(p, undefined, 1, 10)).not.toEqual(a);
    expect(outputTokenIds(tokenize("other prompt"), undefined, 0, 10)).not.toEqual(a);
    for (const id of a) expect(id).toBeGreaterThanOrEqual(100);
  });

  it("has a natural length in 8..32 that varies with the inputs", () => {
    const lengths = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const n = naturalLength(tokenize(`prompt number ${i}`), undefined, 0);
      expect(n).toBeGreaterThanOrEqual(8);
      expect(n).toBeLessThanOrEqual(32);
      lengths.add(n);
    }
    expect(lengths.size).toBeGreaterThan(5);
  });
});
