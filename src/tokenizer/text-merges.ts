// A BPE model's merges before they are resolved to ids (issue 30). Resolving Qwen3's 151k merges
// to id triples (three vocabulary lookups each) and building their table is work the first
// request does not need: it asks the ranks of a few hundred pairs. So a tokenizer loaded from a
// ZIP serves them from a table over the merges' UTF-8 text (TextMergeTable: one hash per merge,
// no lookups), and the merges are resolved to ids after the response (LazyMerges.resolve, in
// slices), after which the tokenizer switches to the id table and the fast form can be written.
// Both tables give a pair the same rank as the library's Map keyed by JSON.stringify([a, b])
// (the last rank of a repeated pair), so the ids do not change at the switch.
import { IdMergeTable } from "./bpe-merge.js";
import type { MergeTexts } from "./bpe-scan.js";
import { emptySlots, entryStarts } from "./open-slots.js";

const FNV = 0x811c9dc5;
const PRIME = 0x01000193;
/** Merges resolved per slice (a few milliseconds). */
const RESOLVE_SLICE = 16_384;

/** Ranks by the pair's text, over the scanned merges (bpe-scan.ts). */
export class TextMergeTable {
  private readonly slots: Int32Array;
  private readonly mask: number;
  /** A pair is listed twice (it keeps its last rank, as the library's Map; the id tables
   *  would keep the first, so such merges have no fast form). */
  readonly repeats: boolean = false;
  private scratch = new Uint8Array(256);
  private readonly utf8 = new TextEncoder();

  constructor(private readonly m: MergeTexts) {
    const { count, bytes, starts } = m;
    const slots = (this.slots = emptySlots(count));
    this.mask = slots.length - 1;
    for (let rank = 0; rank < count; rank++) {
      const a0 = starts[2 * rank]!;
      const a1 = starts[2 * rank + 1]!;
      const b1 = starts[2 * rank + 2]!;
      let h = FNV;
      for (let i = a0; i < a1; i++) h = Math.imul(h ^ bytes[i]!, PRIME);
      h = Math.imul(h ^ 0xff, PRIME); // 0xff is no UTF-8 byte: "ab"+"c" is not "a"+"bc"
      for (let i = a1; i < b1; i++) h = Math.imul(h ^ bytes[i]!, PRIME);
      let s = h & this.mask;
      for (let r = slots[s]!; r !== -1; r = slots[s]!) {
        if (this.samePair(r, a0, a1, b1)) {
          this.repeats = true;
          break;
        }
        s = (s + 1) & this.mask;
      }
      slots[s] = rank;
    }
  }

  /** The rank of the merge (a, b), or -1. */
  rank(a: string, b: string): number {
    const need = 3 * (a.length + b.length);
    if (this.scratch.length < need) this.scratch = new Uint8Array(2 * need);
    // No merge holds a lone surrogate (bpe-scan.ts refuses them); the encoder would write U+FFFD.
    if (LONE_SURROGATE.test(a) || LONE_SURROGATE.test(b)) return -1;
    const la = this.utf8.encodeInto(a, this.scratch).written;
    const lb = this.utf8.encodeInto(b, this.scratch.subarray(la)).written;
    const q = this.scratch;
    let h = FNV;
    for (let i = 0; i < la; i++) h = Math.imul(h ^ q[i]!, PRIME);
    h = Math.imul(h ^ 0xff, PRIME);
    for (let i = la; i < la + lb; i++) h = Math.imul(h ^ q[i]!, PRIME);
    const { bytes, starts } = this.m;
    for (let s = h & this.mask; ; s = (s + 1) & this.mask) {
      const r = this.slots[s]!;
      if (r === -1) return -1;
      const a0 = starts[2 * r]!;
      const a1 = starts[2 * r + 1]!;
      if (a1 - a0 !== la || starts[2 * r + 2]! - a1 !== lb) continue;
      let i = 0;
      while (i < la + lb && bytes[a0 + i] === q[i]) i++;
      if (i === la + lb) return r;
    }
  }

  private samePair(r: number, a0: number, a1: number, b1: number): boolean {
    const { bytes, starts } = this.m;
    const r0 = starts[2 * r]!;
    if (starts[2 * r + 1]! - r0 !== a1 - a0 || starts[2 * r + 2]! - r0 !== b1 - a0) return false;
    for (let i = 0; i < b1 - a0; i++) if (bytes[r0 + i] !== bytes[a0 + i]) return false;
    return true;
  }
}

const LONE_SURROGATE = /\p{Cs}/u;

/** The vocabulary looked up by UTF-8 bytes (to resolve merges without decoding them), with
 *  the added tokens overlaid as the library's Tokenizer overlays them. */
class ByteVocab {
  private readonly starts: Uint32Array;
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly overlay = new Map<string, number>();
  private readonly overlayLengths = new Set<number>();

  constructor(
    private readonly blob: Uint8Array,
    byteLens: Uint32Array,
    private readonly ids: Uint32Array,
    added: readonly { content: string; id: number }[],
  ) {
    const n = byteLens.length;
    this.starts = entryStarts(byteLens);
    this.slots = emptySlots(n);
    this.mask = this.slots.length - 1;
    for (let e = 0; e < n; e++) {
      let h = FNV;
      for (let i = this.starts[e]!; i < this.starts[e + 1]!; i++) h = Math.imul(h ^ blob[i]!, PRIME);
      let s = h & this.mask;
      while (this.slots[s] !== -1) s = (s + 1) & this.mask;
      this.slots[s] = e;
    }
    const utf8 = new TextEncoder();
    for (const a of added) {
      const bytes = utf8.encode(a.content);
      this.overlay.set(binary(bytes, 0, bytes.length), a.id);
      this.overlayLengths.add(bytes.length);
    }
  }

  /** The id of the token whose bytes are p[a0, a1) then p[b0, b1), or undefined. */
  get(p: Uint8Array, a0: number, a1: number, b0: number, b1: number): number | undefined {
    const len = a1 - a0 + (b1 - b0);
    if (this.overlayLengths.has(len)) {
      const o = this.overlay.get(binary(p, a0, a1) + binary(p, b0, b1));
      if (o !== undefined) return o;
    }
    let h = FNV;
    for (let i = a0; i < a1; i++) h = Math.imul(h ^ p[i]!, PRIME);
    for (let i = b0; i < b1; i++) h = Math.imul(h ^ p[i]!, PRIME);
    const blob = this.blob;
    for (let s = h & this.mask; ; s = (s + 1) & this.mask) {
      const e = this.slots[s]!;
      if (e === -1) return undefined;
      const from = this.starts[e]!;
      if (this.starts[e + 1]! - from !== len) continue;
      let i = 0;
      while (i < a1 - a0 && blob[from + i] === p[a0 + i]) i++;
      if (i < a1 - a0) continue;
      let j = 0;
      while (j < b1 - b0 && blob[from + i + j] === p[b0 + j]) j++;
      if (j === b1 - b0) return this.ids[e];
    }
  }
}

function binary(b: Uint8Array, from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += String.fromCharCode(b[i]!);
  return s;
}

/** The merges of a tokenizer loaded from a ZIP: served by their text until resolved to ids. */
export class LazyMerges {
  private texts: MergeTexts | undefined;
  private vocab: { blob: Uint8Array; byteLens: Uint32Array; ids: Uint32Array; added: readonly { content: string; id: number }[] } | undefined;
  /** Until the merges are resolved (then undefined). */
  text: TextMergeTable | undefined;
  /** The id triples and their table once resolved; null when they cannot be (a merge names a
   *  string outside the vocabulary, or a pair repeats): the text table then stays. */
  resolved: { merges: Uint32Array; table: IdMergeTable } | null | undefined;
  private progress: { out: Uint32Array; next: number; byBytes: ByteVocab } | undefined;

  /** `blob`..`ids`: the vocabulary as bpe-scan.ts read it; `added`: the added tokens the
   *  merges resolve against (they overlay the vocabulary). */
  constructor(texts: MergeTexts, vocab: { blob: Uint8Array; byteLens: Uint32Array; ids: Uint32Array; added: readonly { content: string; id: number }[] }) {
    this.texts = texts;
    this.vocab = vocab;
    this.text = new TextMergeTable(texts);
  }

  /** Resolves the merges to ids, yielding after each RESOLVE_SLICE merges; ends with
   *  `resolved` set. */
  *resolve(slice = RESOLVE_SLICE): Generator<number, void> {
    while (this.resolved === undefined) {
      this.step(slice);
      if (this.resolved === undefined) yield slice;
    }
  }

  /** All of it now (a long run needs the id table before the background work got there). */
  resolveNow(): void {
    while (this.resolved === undefined) this.step(Infinity);
  }

  private step(slice: number): void {
    const texts = this.texts!;
    if (!this.progress) {
      if (this.text!.repeats) return this.done(null);
      const v = this.vocab!;
      this.progress = { out: new Uint32Array(3 * texts.count), next: 0, byBytes: new ByteVocab(v.blob, v.byteLens, v.ids, v.added) };
    }
    const { out, byBytes } = this.progress;
    const { bytes, starts, count } = texts;
    const to = Math.min(count, this.progress.next + slice);
    for (let rank = this.progress.next; rank < to; rank++) {
      const a0 = starts[2 * rank]!;
      const a1 = starts[2 * rank + 1]!;
      const b1 = starts[2 * rank + 2]!;
      const left = byBytes.get(bytes, a0, a1, a1, a1);
      const right = byBytes.get(bytes, a1, b1, b1, b1);
      const merged = byBytes.get(bytes, a0, a1, a1, b1);
      if (left === undefined || right === undefined || merged === undefined) return this.done(null);
      out[3 * rank] = left;
      out[3 * rank + 1] = right;
      out[3 * rank + 2] = merged;
    }
    this.progress.next = to;
    if (to < count) return;
    const table = new IdMergeTable(out);
    this.done(table.repeats ? null : { merges: out, table });
  }

  private done(resolved: { merges: Uint32Array; table: IdMergeTable } | null): void {
    this.resolved = resolved;
    this.progress = undefined;
    if (resolved) {
      // The switch: from here the id table serves, and the text is let go.
      this.text = undefined;
      this.texts = undefined;
    }
    this.vocab = undefined;
  }
}
