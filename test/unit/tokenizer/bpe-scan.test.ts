// tokenizer.json read by the scanner (bpe-scan.ts) means what JSON.parse of the whole file
// means: for Qwen3 the same vocabulary (token -> id), the same merges and the same rest; small
// documents cover escapes, both merge forms, and what makes it give up (the caller then parses
// the whole file): a repeated key on the path, a value of another shape, broken JSON.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { scanBpeTokenizerJson } from "../../../src/tokenizer/bpe-scan.js";
import { fastFormFromScan, fastFormOf } from "../../../src/tokenizer/fast-form.js";
import { QWEN3_TOKENIZER_JSON } from "./qwen3-files.js";

const bundle = (text: string) => ({ files: new Map([["tokenizer.json", text]]), sha256: "s", zipBytes: 0 });

describe("scanBpeTokenizerJson", () => {
  it("Qwen3: the same fast form as JSON.parse of the whole file", () => {
    const text = readFileSync(QWEN3_TOKENIZER_JSON, "utf8");
    const scanned = fastFormFromScan(bundle(text), scanBpeTokenizerJson(text)!)!;
    const parsed = fastFormOf(bundle(text), JSON.parse(text) as Record<string, unknown>)!;
    expect(scanned.tokenizerJson).toEqual(parsed.tokenizerJson);
    expect(scanned.bpe.merges).toEqual(parsed.bpe.merges);
    const vocab = (ff: typeof scanned) => {
      const m = new Map<string, number>();
      let at = 0;
      ff.bpe.lens.forEach((len, e) => {
        m.set(ff.bpe.blob.slice(at, at + len), ff.bpe.ids[e]!);
        at += len;
      });
      return m;
    };
    const a = vocab(scanned);
    expect(a.size).toBe(151_643);
    expect(a).toEqual(vocab(parsed));
  });

  it("escaped tokens, both merge forms, and every other field as JSON.parse reads it", () => {
    const doc = {
      version: "1.0",
      added_tokens: [{ id: 9, content: "<s>", special: true }],
      model: { type: "BPE", dropout: null, vocab: { a: 0, b: 1, ab: 2, '"': 3, "\\": 4, '"\\': 5, "é\n": 6, "\u00e9": 7, x: 8 }, merges: [["a", "b"], '" \\', "x y z"], fuse_unk: false },
      decoder: { type: "ByteLevel", nested: [1, { deep: "}]" }] },
    };
    const s = scanBpeTokenizerJson(JSON.stringify(doc, null, 2))!;
    expect(Object.fromEntries(s.keys.map((k, i) => [k, s.ids[i]]))).toEqual(doc.model.vocab);
    expect(s.lefts).toEqual(["a", '"', "x"]);
    expect(s.rights).toEqual(["b", "\\", "y"]);
    expect(s.rest).toEqual({ ...doc, model: { ...doc.model, vocab: {}, merges: [] } });
  });

  it.each([
    ["a repeated model key", '{"model": {"vocab": {}, "merges": []}, "model": {"vocab": {}, "merges": []}}'],
    ["a repeated vocab key", '{"model": {"vocab": {}, "vocab": {}, "merges": []}}'],
    ["no merges", '{"model": {"vocab": {"a": 0}}}'],
    ["a fractional id", '{"model": {"vocab": {"a": 0.5}, "merges": []}}'],
    ["a negative id", '{"model": {"vocab": {"a": -1}, "merges": []}}'],
    ["a merge of one string", '{"model": {"vocab": {"a": 0}, "merges": ["a"]}}'],
    ["vocab as an array", '{"model": {"vocab": [], "merges": []}}'],
    ["broken JSON elsewhere", '{"model": {"vocab": {}, "merges": []}, "x": [1,}'],
    ["trailing bytes", '{"model": {"vocab": {}, "merges": []}} x'],
  ])("gives up on %s", (_, text) => {
    expect(scanBpeTokenizerJson(text)).toBeUndefined();
  });

  it("a token listed twice: no fast form (JSON.parse keeps the last id; the tables would keep both)", () => {
    const text = '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "a": 2}, "merges": []}}';
    expect(fastFormFromScan(bundle(text), scanBpeTokenizerJson(text)!)).toBeUndefined();
  });
});
