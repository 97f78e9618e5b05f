// Long unbroken runs (1 MB of spaces, a letter run with no break) and huge prompts through the
// edge tokenizer: ids IDENTICAL to HF's Rust tokenizer (npm `tokenizers`) on runs far past the
// library's 256-character merge cache, and the bounded encode stops at the context length
// after a small share of the work (counted in pauses, one per slice, not timed).
import { Tokenizer as RustTokenizer } from "tokenizers";
import { beforeAll, describe, expect, it } from "vitest";
import { TokenizerLimitError } from "../../../src/tokenizer/errors.js";
import { MAX_PROMPT_RUN, type EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { QWEN3_TOKENIZER_JSON, qwen3Tokenizer } from "./qwen3-files.js";

let edge: EdgeTokenizer;
let rust: RustTokenizer;

beforeAll(async () => {
  edge = await qwen3Tokenizer();
  rust = RustTokenizer.fromFile(QWEN3_TOKENIZER_JSON);
});

/** Deterministic lowercase letters with no break: one pre-token of BPE merges. */
function letters(n: number, seed = 7): string {
  let x = seed;
  let s = "";
  while (s.length < n) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    s += String.fromCharCode(97 + ((x >> 16) % 26));
  }
  return s;
}

const LONG_RUNS: [string, string][] = [
  ["300 spaces", " ".repeat(300)],
  ["5000 spaces", " ".repeat(5000)],
  ["40000 spaces", " ".repeat(40_000)],
  ["3000 a", "a".repeat(3000)],
  ["20000 letters, no break", letters(20_000)],
  ["2000 =", "=".repeat(2000)],
  ["1000 newlines", "\n".repeat(1000)],
  ["600 tabs between words", `Hello${"\t".repeat(600)}world`],
  ["spaces before a word", `x ${" ".repeat(700)}y`],
  ["700 CJK characters", "中".repeat(700)],
  ["400 emoji", "😀".repeat(400)],
  ["a long run around special tokens", `<|im_start|>user\n${" ".repeat(1000)}${letters(1000)}<|im_end|>\n`],
  ["alphabet x 40", "abcdefghijklmnopqrstuvwxyz".repeat(40)],
  ["257 dashes then a letter", `${"-".repeat(257)}a`],
  ["NFC-composed run", "e\u0301".repeat(600)],
];

describe("long runs: ids identical to HF's Rust tokenizer", () => {
  it.each(LONG_RUNS)("%s", async (_name, text) => {
    for (const addSpecialTokens of [false, true]) {
      const want = (await rust.encode(text, null, { addSpecialTokens })).getIds();
      expect(edge.encode(text, { addSpecialTokens })).toEqual(want);
      const bounded = await edge.encodeWithin(text, { addSpecialTokens, maxTokens: Infinity, pause: async () => undefined });
      expect(bounded.ids).toEqual(want);
    }
  });

  it("1 MB of spaces: the same ids as Rust, in slices with pauses between them", async () => {
    const text = " ".repeat(1_000_000);
    const want = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
    let pauses = 0;
    const r = await edge.encodeWithin(text, { addSpecialTokens: false, maxTokens: 40_960, pause: async () => void pauses++ });
    expect(r.ids).toEqual(want);
    expect(want.length).toBe(7813);
    // One word of merges, still sliced: every slice is a bounded amount of work.
    expect(pauses).toBeGreaterThan(20);
  });
});

describe("bounded encode", () => {
  const prose = "The quick brown fox jumps over the lazy dog, 1234 times! ";

  it("stops once the prompt reaches maxTokens, after a share of the work the prompt's size does not set", async () => {
    const count = async (text: string, maxTokens: number) => {
      let pauses = 0;
      const r = await edge.encodeWithin(text, { maxTokens, pause: async () => void pauses++ });
      return { r, pauses };
    };
    const small = await count(prose.repeat(2_000), 1_000); // 114 KB
    const big = await count(prose.repeat(70_000), 1_000); // 4 MB
    expect(small.r).toEqual({ exceeded: true, atLeast: 1_000 });
    expect(big.r).toEqual({ exceeded: true, atLeast: 1_000 });
    // The same work for 35 times the text: it stopped at the same token.
    expect(big.pauses).toBe(small.pauses);
    const whole = await count(prose.repeat(2_000), Infinity);
    expect(whole.r.exceeded).toBeUndefined();
    expect(whole.pauses).toBeGreaterThan(10 * small.pauses);
  });

  it("a prompt that fits comes back whole, with the same ids as encode", async () => {
    const text = prose.repeat(50);
    const r = await edge.encodeWithin(text, { maxTokens: 40_960, pause: async () => undefined });
    expect(r.ids).toEqual(edge.encode(text));
  });

  it("a run that alone has more tokens than allowed is refused before it is merged", async () => {
    let pauses = 0;
    // 600k letters: at least 600000/128 tokens whatever the merges, more than 1000.
    const r = await edge.encodeWithin(letters(600_000), { maxTokens: 1_000, pause: async () => void pauses++ });
    expect(r).toEqual({ exceeded: true, atLeast: 1_000 });
    expect(pauses).toBeLessThan(10);
  });

  it("a run longer than MAX_PROMPT_RUN is a TokenizerLimitError, not hours of merging", async () => {
    await expect(edge.encodeWithin(" ".repeat(MAX_PROMPT_RUN + 1), { maxTokens: 40_960, pause: async () => undefined })).rejects.toBeInstanceOf(TokenizerLimitError);
  });

  it("the byte bound for Qwen3: context x the longest token (128 bytes) x NFC's 3", () => {
    expect(edge.promptByteBound(40_960)).toBe(40_960 * 128 * 3);
    expect(edge.promptByteBound(40_960, 1_000_000)).toBe(1_000_000);
    expect(edge.promptByteBound(undefined)).toBeUndefined();
    expect(edge.promptByteBound(undefined, 5)).toBe(5);
  });
});
