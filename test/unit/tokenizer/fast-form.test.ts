// The tokenizer's fast form (issue 30) against the ZIP: the parity texts (and long runs, which
// take the WordMerge path) give the same ids and the same text back through the fast form,
// read from its bytes, as through the library's own constructor over the ZIP's tokenizer.json.
// Its bytes are refused when damaged, of another bundle or of another format version.
import { beforeAll, describe, expect, it } from "vitest";
import type { TokenizerBundle } from "../../../src/tokenizer/bundle.js";
import { sha256Hex, type TokenizerBundle as Bundle } from "../../../src/tokenizer/bundle.js";
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
  bytes = (await encodeFastForm((await (await loadTokenizerAndFastForm(bundle)).fastForm())!))!;
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

  // The ZIP path answers before the merges are resolved to ids; the fast form is made after
  // the response (tokenizer-bundles.ts runs fastForm() in waitUntil).
  describe("made after the response", () => {
    /** The bundle as tokenizer-bundles.ts unpacks it: tokenizer.json left as bytes. */
    const raw = (b: Bundle, sha256 = b.sha256): Bundle => ({ files: new Map([...b.files].filter(([n]) => n !== "tokenizer.json")), sha256, zipBytes: b.zipBytes, tokenizerJsonBytes: new TextEncoder().encode(b.files.get("tokenizer.json")!) });

    it("is byte for byte the fast form the ZIP path made before (FAST_FORM_VERSION 1)", async () => {
      // The digest of the fast form the previous load path (string scan, merges resolved
      // in-request) made of this bundle with its sha256 set to zeros. A new FAST_FORM_VERSION
      // changes it.
      const loaded = await loadTokenizerAndFastForm(raw(bundle, "0".repeat(64)));
      const made = (await encodeFastForm((await loaded.fastForm())!))!;
      expect(FAST_FORM_VERSION).toBe(1);
      expect(await sha256Hex(made)).toBe("c2bc54fa1cbfc15e602bb8080a1caadf14c779da6b1fa5253fa41b95571dbc7c");
    });

    it("is resolved in slices with a pause between them, and switches the tokenizer to the id table", async () => {
      const loaded = await loadTokenizerAndFastForm(raw(bundle));
      const before = PARITY_TEXTS.slice(0, 40).map((t) => loaded.tokenizer.encode(t));
      expect(loaded.mergeTable()).toBe("text");
      let pauses = 0;
      const ff = await loaded.fastForm(async () => void pauses++);
      expect(pauses).toBe(Math.ceil(151_387 / 16_384) - 1);
      expect(loaded.mergeTable()).toBe("ids");
      expect(await loaded.fastForm()).toBe(ff); // once
      expect(await encodeFastForm(ff!)).toEqual(bytes);
      expect(PARITY_TEXTS.slice(0, 40).map((t) => loaded.tokenizer.encode(t))).toEqual(before);
    });

    it("a long run before the switch resolves the merges in the request; the fast form is the same", async () => {
      const loaded = await loadTokenizerAndFastForm(raw(bundle));
      expect(loaded.mergeTable()).toBe("text");
      for (const text of LONG) expect(loaded.tokenizer.encode(text)).toEqual(plain.encode(text));
      expect(loaded.mergeTable()).toBe("ids");
      expect(await encodeFastForm((await loaded.fastForm(() => Promise.reject(new Error("no slices left"))))!)).toEqual(bytes);
    });

    it("merges that cannot be resolved to ids keep the text table, as the library ranks them, and make no fast form", async () => {
      // A repeated pair: the library keeps its last rank (the id table would keep the first).
      const doc = (merges: unknown[]) => ({ model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2, c: 3, bc: 5 }, merges }, added_tokens: [], normalizer: null, pre_tokenizer: { type: "WhitespaceSplit" }, post_processor: null, decoder: null });
      const cases = [
        // The library ranks (b, c) 2, below (a, b): "abc" is ["ab", "c"] (by the first rank,
        // ["a", "bc"]).
        [["b", "c"], ["a", "b"], ["b", "c"]],
        [["a", "b"], ["x", "y"], ["ab", "c"]],
      ];
      for (const merges of cases) {
        const json = JSON.stringify(doc(merges));
        const zipLike: Bundle = { files: new Map(), sha256: "s", zipBytes: 0, tokenizerJsonBytes: new TextEncoder().encode(json) };
        const lazy = await loadTokenizerAndFastForm(zipLike);
        const lib = await loadTokenizer({ files: new Map([["tokenizer.json", json]]), sha256: "s", zipBytes: 0 }, { plain: true });
        expect(lazy.tokenizer.encode("abc abcabc bc")).toEqual(lib.encode("abc abcabc bc"));
        if (merges.length === 3 && merges[2]![0] === "b") expect(lib.encode("abc")).toEqual([2, 3]);
        expect(await lazy.fastForm(async () => {})).toBeUndefined();
        expect(lazy.mergeTable()).toBe("text");
        expect(lazy.tokenizer.encode("abc abcabc bc")).toEqual(lib.encode("abc abcabc bc"));
      }
    });
  });
});
