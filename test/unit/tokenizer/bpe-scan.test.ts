// tokenizer.json read by the scanner (bpe-scan.ts) on its UTF-8 bytes means what JSON.parse of
// the whole file means: for Qwen3 the same vocabulary (token -> id), the same merges and the
// same rest; small documents cover escapes, both merge forms, and what makes it give up (the
// caller then decodes and parses the whole file): a repeated key on the path, a value of
// another shape, broken JSON, bytes that are not UTF-8, a lone surrogate.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { scanBpeTokenizerJson, type ScannedBpe } from "../../../src/tokenizer/bpe-scan.js";
import { fastFormOf, lazyFastForm } from "../../../src/tokenizer/fast-form.js";
import { QWEN3_TOKENIZER_JSON } from "./qwen3-files.js";

const bundle = (text: string) => ({ files: new Map([["tokenizer.json", text]]), sha256: "s", zipBytes: 0 });
const utf8 = new TextEncoder();
const scan = (text: string) => scanBpeTokenizerJson(utf8.encode(text));
const td = new TextDecoder();

/** The scanned vocabulary as token -> id, and the merges as [left, right] strings. */
function read(s: ScannedBpe): { vocab: Record<string, number>; merges: [string, string][] } {
  const vocab: Record<string, number> = {};
  let at = 0;
  s.byteLens.forEach((len, e) => {
    vocab[td.decode(s.blob.subarray(at, at + len))] = s.ids[e]!;
    at += len;
  });
  const merges: [string, string][] = [];
  const { bytes, starts } = s.merges;
  for (let r = 0; r < s.merges.count; r++) merges.push([td.decode(bytes.subarray(starts[2 * r], starts[2 * r + 1])), td.decode(bytes.subarray(starts[2 * r + 1], starts[2 * r + 2]))]);
  return { vocab, merges };
}

describe("scanBpeTokenizerJson", () => {
  it("Qwen3: the same fast form as JSON.parse of the whole file", async () => {
    const bytes = new Uint8Array(readFileSync(QWEN3_TOKENIZER_JSON));
    const text = td.decode(bytes);
    const lazy = (await lazyFastForm(bundle(text), scanBpeTokenizerJson(bytes)!))!;
    const scanned = (await lazy.finish(async () => {}))!;
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
      model: { type: "BPE", dropout: null, vocab: { a: 0, b: 1, ab: 2, '"': 3, "\\": 4, '"\\': 5, "é\t": 6, "\u00e9": 7, x: 8, "😀": 10, "\u0120\\u": 11 }, merges: [["a", "b"], ['"', "\\"], ["x", "😀"]], fuse_unk: false },
      decoder: { type: "ByteLevel", nested: [1, { deep: "}]" }] },
    };
    const s = scan(JSON.stringify(doc, null, 2))!;
    expect(read(s)).toEqual({ vocab: doc.model.vocab, merges: doc.model.merges });
    expect([...s.lens]).toEqual(Object.keys(doc.model.vocab).map((k) => k.length));
    expect(s.rest).toEqual({ ...doc, model: { ...doc.model, vocab: {}, merges: [] } });
    // The old "a b" form, split as the library splits it (split(" ", 2)).
    const old = scan(JSON.stringify({ model: { vocab: { a: 0 }, merges: ["a b", '" \\', "x y z", "é 😀"] } }))!;
    expect(read(old).merges).toEqual([["a", "b"], ['"', "\\"], ["x", "y"], ["é", "😀"]]);
  });

  it.each([
    ["a repeated model key", '{"model": {"vocab": {}, "merges": []}, "model": {"vocab": {}, "merges": []}}'],
    ["a repeated vocab key", '{"model": {"vocab": {}, "vocab": {}, "merges": []}}'],
    ["no merges", '{"model": {"vocab": {"a": 0}}}'],
    ["a fractional id", '{"model": {"vocab": {"a": 0.5}, "merges": []}}'],
    ["a negative id", '{"model": {"vocab": {"a": -1}, "merges": []}}'],
    ["a leading zero", '{"model": {"vocab": {"a": 01}, "merges": []}}'],
    ["a merge of one string", '{"model": {"vocab": {"a": 0}, "merges": ["a"]}}'],
    ["merges of both forms", '{"model": {"vocab": {"a": 0}, "merges": [["a", "b"], "a b"]}}'],
    ["vocab as an array", '{"model": {"vocab": [], "merges": []}}'],
    ["broken JSON elsewhere", '{"model": {"vocab": {}, "merges": []}, "x": [1,}'],
    ["trailing bytes", '{"model": {"vocab": {}, "merges": []}} x'],
    ["a control character in a token", '{"model": {"vocab": {"a\nb": 0}, "merges": []}}'],
    ["a lone surrogate in a token", '{"model": {"vocab": {"\\ud800": 0}, "merges": []}}'],
    ["a lone surrogate in a merge", '{"model": {"vocab": {"a": 0}, "merges": [["a", "\\udc00"]]}}'],
  ])("gives up on %s", (_, text) => {
    expect(scan(text)).toBeUndefined();
  });

  it.each([
    ["in a token", [0xc3]],
    ["in a merge (an overlong form)", [0xc0, 0xaf]],
    ["in a merge (a surrogate's bytes)", [0xed, 0xa0, 0x80]],
    ["outside both", [0xff]],
  ])("gives up on bytes that are not UTF-8 %s", (where, bad) => {
    const doc = where.startsWith("in a token") ? '{"model": {"vocab": {"a@": 0}, "merges": []}}' : where.startsWith("in a merge") ? '{"model": {"vocab": {"a": 0}, "merges": [["a", "@"]]}}' : '{"x": "@", "model": {"vocab": {}, "merges": []}}';
    const bytes = utf8.encode(doc);
    const at = bytes.indexOf(0x40);
    const broken = new Uint8Array([...bytes.subarray(0, at), ...bad, ...bytes.subarray(at + 1)]);
    expect(scanBpeTokenizerJson(broken)).toBeUndefined();
    expect(scanBpeTokenizerJson(bytes)).toBeDefined();
  });

  // The UTF-8 check of every copy (copyContent: the fast paths and the "a b" merge form), its
  // table's boundaries each way, against TextDecoder's fatal decoding as the reference: a
  // sequence is taken exactly when it is well-formed, with its text and UTF-16 length.
  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const wellFormed = (b: number[]) => {
    try {
      return fatal.decode(new Uint8Array(b));
    } catch {
      return undefined;
    }
  };
  const SEQUENCES = [
    [0x7f], [0xc2, 0x80], [0xdf, 0xbf], [0xe0, 0xa0, 0x80], [0xed, 0x9f, 0xbf], [0xee, 0x80, 0x80], [0xef, 0xbf, 0xbf], [0xf0, 0x90, 0x80, 0x80], [0xf4, 0x8f, 0xbf, 0xbf],
    [0x80], [0xc1, 0xbf], [0xc2, 0x41], [0xe0, 0x9f, 0xbf], [0xed, 0xa0, 0x80], [0xe1, 0x80], [0xf0, 0x8f, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xf1, 0x80, 0x80],
  ];
  const POSITIONS = [
    ["a token", '{"model": {"vocab": {"a": 0, "x@y": 1}, "merges": []}}', (s: ScannedBpe) => Object.keys(read(s).vocab)[1]],
    ["a merge", '{"model": {"vocab": {"a": 0}, "merges": [["a", "x@y"]]}}', (s: ScannedBpe) => read(s).merges[0]![1]],
    ['an "a b" merge', '{"model": {"vocab": {"a": 0}, "merges": ["a x@y"]}}', (s: ScannedBpe) => read(s).merges[0]![1]],
  ] as const;
  it.each(POSITIONS.flatMap(([where, doc, pick]) => SEQUENCES.map((seq) => [where, seq.map((b) => b.toString(16)).join(" "), doc, pick, seq] as const)))("in %s, bytes %s: taken exactly when well-formed", (where, _hex, doc, pick, seq) => {
    const bytes = utf8.encode(doc);
    const at = bytes.indexOf(0x40);
    const s = scanBpeTokenizerJson(new Uint8Array([...bytes.subarray(0, at), ...seq, ...bytes.subarray(at + 1)]));
    const text = wellFormed(seq);
    if (text === undefined) return expect(s).toBeUndefined();
    expect(pick(s!)).toBe(`x${text}y`);
    if (where === "a token") expect(s!.lens[1]).toBe(`x${text}y`.length);
  });

  it("a token listed twice: no fast form (JSON.parse keeps the last id; the tables would keep both)", async () => {
    const text = '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "a": 2}, "merges": []}}';
    expect(await lazyFastForm(bundle(text), scan(text)!)).toBeUndefined();
  });
});
