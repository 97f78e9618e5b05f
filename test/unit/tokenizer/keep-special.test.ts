// Skipping special tokens while keeping a tool format's markers, on the real Qwen3 tokenizer:
// the text is what skip_special_tokens gives, plus the markers where they were.
import { beforeAll, describe, expect, it } from "vitest";
import { keepingSpecialTokens } from "../../../src/tokenizer/keep-special.js";
import type { EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { qwen3Tokenizer } from "./qwen3-files.js";

let tok: EdgeTokenizer;
beforeAll(async () => {
  tok = await qwen3Tokenizer();
});

describe("keepingSpecialTokens", () => {
  it("keeps the marker, drops the other special tokens", () => {
    const ids = tok.encode("<|im_start|>call f<|im_end|><|endoftext|>");
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe("call f");
    const dec = keepingSpecialTokens(tok, ["<|im_start|>"]);
    expect(dec.decode(ids, { skipSpecialTokens: true })).toBe("<|im_start|>call f");
    expect(dec.decode(ids)).toBe("<|im_start|>call f");
  });

  it("skip_special_tokens false decodes everything, as before", () => {
    const ids = tok.encode("a<|im_end|>b<|endoftext|>");
    const dec = keepingSpecialTokens(tok, ["<|im_start|>"]);
    expect(dec.decode(ids, { skipSpecialTokens: false })).toBe(tok.decode(ids, { skipSpecialTokens: false }));
    expect(dec.decode(ids, { skipSpecialTokens: false })).toBe("a<|im_end|>b<|endoftext|>");
  });

  it("markers that are not special tokens of this tokenizer (or not tokens at all) leave it as it is", () => {
    // <tool_call> is an added token of Qwen3 but not a special one: skipping never drops it.
    expect(keepingSpecialTokens(tok, ["<tool_call>", "<|python_tag|>"])).toBe(tok);
    expect(keepingSpecialTokens(tok, [])).toBe(tok);
    expect(tok.decode(tok.encode("<tool_call>x</tool_call><|im_end|>"), { skipSpecialTokens: true })).toBe("<tool_call>x</tool_call>");
  });

  it("a marker split over a token boundary of a longer run decodes byte-exact with its neighbours", () => {
    const text = "héllo<|im_start|>wörld ✓";
    const ids = tok.encode(`${text}<|endoftext|>`);
    expect(keepingSpecialTokens(tok, ["<|im_start|>"]).decode(ids)).toBe(text);
  });
});
