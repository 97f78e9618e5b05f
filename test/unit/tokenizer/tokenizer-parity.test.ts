// Token ids from src/tokenizer (@huggingface/tokenizers, pure JS) must equal HF's Rust tokenizer
// (npm `tokenizers`, the official Node binding) on the real Qwen3 tokenizer.json. The two disagree
// where the pre-tokenizer's Oniguruma regex has no exact JS translation, so this is a test per
// bundled model (ARCHITECTURE.md decision 12). Every text counts; none is excluded.
import { Tokenizer as RustTokenizer } from "tokenizers";
import { beforeAll, describe, expect, it } from "vitest";
import { loadTokenizerAndFastForm, type EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { PARITY_TEXTS } from "./parity-texts.js";
import { QWEN3_TOKENIZER_JSON, qwen3Bundle, qwen3Tokenizer } from "./qwen3-files.js";

let edge: EdgeTokenizer;
let rust: RustTokenizer;

beforeAll(async () => {
  edge = await qwen3Tokenizer();
  rust = RustTokenizer.fromFile(QWEN3_TOKENIZER_JSON);
});

describe("Qwen3 tokenizer parity with HF's Rust tokenizer", () => {
  it(`covers at least 200 texts (${PARITY_TEXTS.length})`, () => {
    expect(PARITY_TEXTS.length).toBeGreaterThanOrEqual(200);
  });

  it("encodes every text to the same ids (with and without special tokens)", async () => {
    const mismatches: { text: string; edge: number[]; rust: number[] }[] = [];
    for (const text of PARITY_TEXTS) {
      for (const addSpecialTokens of [false, true]) {
        const want = (await rust.encode(text, null, { addSpecialTokens })).getIds();
        const got = edge.encode(text, { addSpecialTokens });
        if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push({ text, edge: got, rust: want });
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("decodes every text's ids to the same string (keeping and skipping special tokens)", async () => {
    const mismatches: { text: string; skip: boolean; edge: string; rust: string }[] = [];
    for (const text of PARITY_TEXTS) {
      const ids = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
      for (const skip of [false, true]) {
        const want = await rust.decode(ids, skip);
        const got = edge.decode(ids, { skipSpecialTokens: skip });
        if (got !== want) mismatches.push({ text, skip, edge: got, rust: want });
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("reports Qwen3's eos and special ids", () => {
    expect(edge.eosTokenIds).toEqual([151645, 151643]);
    expect(edge.specialTokenIds.has(151645)).toBe(true);
    expect(edge.tokenToId("<|im_start|>")).toBe(151644);
  });
});

// A tokenizer just read from a ZIP answers before its merges are resolved to ids (issue 30):
// the merge ranks come from the pairs' text (text-merges.ts) until the work after the response
// resolves them and switches it to the id table. Both must give the Rust tokenizer's ids.
describe("Qwen3 parity before and after the switch to the id merge table", () => {
  it("encodes every text to the Rust tokenizer's ids, by the merges' text and then by ids", async () => {
    const b = await qwen3Bundle();
    const loaded = await loadTokenizerAndFastForm({ ...b, files: new Map([...b.files].filter(([n]) => n !== "tokenizer.json")), tokenizerJsonBytes: new TextEncoder().encode(b.files.get("tokenizer.json")!) });
    // A piece of 256+ characters needs the id table (WordMerge): left for after the switch.
    const short = PARITY_TEXTS.filter((t) => !/\S{256,}|\s{256,}/.test(t));
    const run = async (texts: readonly string[]) => {
      const mismatches: string[] = [];
      for (const text of texts) {
        for (const addSpecialTokens of [false, true]) {
          const want = (await rust.encode(text, null, { addSpecialTokens })).getIds();
          if (JSON.stringify(loaded.tokenizer.encode(text, { addSpecialTokens })) !== JSON.stringify(want)) mismatches.push(text.slice(0, 40));
        }
      }
      return mismatches;
    };
    expect(short.length).toBeGreaterThan(200);
    expect(await run(short)).toEqual([]);
    expect(loaded.mergeTable()).toBe("text");
    const ff = await loaded.fastForm();
    expect(ff).toBeDefined();
    expect(loaded.mergeTable()).toBe("ids");
    expect(await run(PARITY_TEXTS)).toEqual([]);
  }, 60_000);
});
