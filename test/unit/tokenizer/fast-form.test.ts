// The tokenizer's fast form (issue 30) against the ZIP: the parity texts (and long runs, which
// take the WordMerge path) give the same ids and the same text back through the fast form,
// read from its bytes, as through the library's own constructor over the ZIP's tokenizer.json.
// Its bytes are refused when damaged, of another bundle or of another format version.
import { beforeAll, describe, expect, it } from "vitest";
import type { TokenizerBundle } from "../../../src/tokenizer/bundle.js";
import { decodeFastForm, encodeFastForm, FAST_FORM_VERSION, fastFormOf } from "../../../src/tokenizer/fast-form.js";
import { loadTokenizer, loadTokenizerAndFastForm, loadTokenizerFromFastForm, type EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { PARITY_TEXTS } from "./parity-texts.js";
import { qwen3Bundle } from "./qwen3-files.js";

let bundle: TokenizerBundle;
let bytes: Uint8Array;
let fast: EdgeTokenizer;
let plain: EdgeTokenizer;

beforeAll(async () => {
  bundle = await qwen3Bundle();
  const { fastForm } = await loadTokenizerAndFastForm(bundle);
  bytes = (await encodeFastForm(fastForm!))!;
  fast = await loadTokenizerFromFastForm((await decodeFastForm(bytes, bundle.sha256))!);
  plain = await loadTokenizer(bundle, { plain: true });
}, 60_000);

const LONG = ["a".repeat(3000), " ".repeat(5000), "ab".repeat(2000) + " tail", "😀".repeat(700), "x=1;".repeat(900), "中文".repeat(800)];

describe("tokenizer fast form", () => {
  it("encodes the parity texts and long runs to the ZIP path's ids", () => {
    const mismatches: string[] = [];
    for (const text of [...PARITY_TEXTS, ...LONG]) {
      for (const addSpecialTokens of [false, true]) {
        if (JSON.stringify(fast.encode(text, { addSpecialTokens })) !== JSON.stringify(plain.encode(text, { addSpecialTokens }))) mismatches.push(text.slice(0, 40));
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("decodes to the same text and reports the same special ids and bounds", () => {
    for (const text of PARITY_TEXTS) {
      const ids = plain.encode(text, { addSpecialTokens: false });
      for (const skipSpecialTokens of [false, true]) expect(fast.decode(ids, { skipSpecialTokens })).toBe(plain.decode(ids, { skipSpecialTokens }));
    }
    expect(fast.eosTokenIds).toEqual(plain.eosTokenIds);
    expect([...fast.specialTokenIds]).toEqual([...plain.specialTokenIds]);
    expect(fast.bosTokenId).toBe(plain.bosTokenId);
    for (const t of ["<|im_start|>", "Ġthe", "hello", "ĠĠĠ", "not-a-token-at-all"]) expect(fast.tokenToId(t)).toBe(plain.tokenToId(t));
    expect(fast.promptByteBound(40_960)).toBe(plain.promptByteBound(40_960));
    expect(fast.config).toEqual(plain.config);
  });

  it("carries the bundle's other files (chat templates) but not tokenizer.json", async () => {
    const ff = (await decodeFastForm(bytes, bundle.sha256))!;
    expect(ff.files.get("tokenizer_config.json")).toBe(bundle.files.get("tokenizer_config.json"));
    expect(ff.files.has("tokenizer.json")).toBe(false);
    // The point of it: far less to read than tokenizer.json.
    expect(bytes.length).toBeLessThan(bundle.files.get("tokenizer.json")!.length / 2);
  });

  it("is refused for another bundle's sha256, a changed byte, a truncation or another version", async () => {
    expect(await decodeFastForm(bytes, "0".repeat(64))).toBeUndefined();
    const flipped = bytes.slice();
    flipped[bytes.length >> 1]! ^= 1;
    expect(await decodeFastForm(flipped, bundle.sha256)).toBeUndefined();
    expect(await decodeFastForm(bytes.subarray(0, bytes.length - 100), bundle.sha256)).toBeUndefined();
    // Another version with a valid digest: only the version check can refuse it.
    const other = bytes.slice();
    new DataView(other.buffer).setUint32(4, FAST_FORM_VERSION + 1, true);
    const size = other.length - 32;
    other.set(new Uint8Array(await crypto.subtle.digest("SHA-256", other.subarray(0, size))), size);
    expect(await decodeFastForm(other, bundle.sha256)).toBeUndefined();
    expect(await decodeFastForm(bytes, bundle.sha256)).toBeDefined();
  });

  it("is not made for a model its id tables cannot run exactly (a merge outside the vocabulary, a repeated pair)", () => {
    const json = (merges: unknown[]) => ({ model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges }, added_tokens: [] });
    expect(fastFormOf(bundle, json(["a b"]))).toBeDefined();
    expect(fastFormOf(bundle, json(["a c"]))).toBeUndefined();
    expect(fastFormOf(bundle, json(["a b", ["a", "b"]]))).toBeUndefined();
    expect(fastFormOf(bundle, { model: { type: "WordPiece", vocab: { a: 0 } } })).toBeUndefined();
  });
});
