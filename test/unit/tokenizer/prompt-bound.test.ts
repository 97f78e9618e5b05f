// The prompt byte bound as a table: the normalizer's worst shrink, and when no bound holds.
import { describe, expect, it } from "vitest";
import { utf8Length } from "../../../src/core/utf8.js";
import { normalizerShrink, promptByteBound } from "../../../src/tokenizer/prompt-bound.js";

describe("normalizerShrink", () => {
  it.each([
    [null, 1],
    [{ type: "NFC" }, 3],
    [{ type: "NFD" }, 3],
    [{ type: "NFKC" }, 4],
    [{ type: "Lowercase" }, 3],
    [{ type: "Prepend" }, 1],
    [{ type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" }] }, 12],
    [{ type: "Strip" }, Infinity],
    [{ type: "Replace" }, Infinity],
    [{ type: "Sequence", normalizers: [{ type: "NFC" }, { type: "StripAccents" }] }, Infinity],
  ] as const)("%j -> %s", (n, f) => {
    expect(normalizerShrink(n)).toBe(f);
  });

  it("NFC's worst case really is 3: Hangul L+V+T jamo compose into one syllable", () => {
    const jamo = "\u1100\u1161\u11a8";
    expect(utf8Length(jamo) / utf8Length(jamo.normalize("NFC"))).toBe(3);
  });
});

describe("promptByteBound", () => {
  it.each([
    // contextLength, maxTokenBytes, shrink, fusesUnknown, configured, bound
    [1000, 128, 3, false, undefined, 384_000],
    [1000, 128, 3, false, 10_000, 10_000],
    [1000, 128, 3, false, 1e9, 384_000], // a knob above the sound bound changes nothing
    [1000, 128, Infinity, false, undefined, undefined], // a normalizer that deletes text: no bound
    [1000, 128, 3, true, undefined, undefined], // unknowns fuse: no bound
    [1000, 128, 3, true, 7, 7], // the operator's knob still holds
    [undefined, 128, 3, false, undefined, undefined], // no context length: no bound
  ] as const)("context %s, %s bytes/token, shrink %s, fuse %s, knob %s -> %s", (contextLength, maxTokenBytes, shrink, fusesUnknown, configured, bound) => {
    expect(promptByteBound({ contextLength, maxTokenBytes, shrink, fusesUnknown, ...(configured !== undefined ? { configured } : {}) })).toBe(bound);
  });

  it("utf8Length agrees with TextEncoder (ASCII, 2-, 3- and 4-byte characters, a lone surrogate)", () => {
    for (const s of ["", "abc", "é", "中文", "😀x", "a\ud800b", "\udc00"]) expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
  });
});
