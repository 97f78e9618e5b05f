// A BPE vocabulary looked up in place (fast-form.ts): the tokens stay one string, and an
// open-addressing table of entry numbers, hashed by FNV-1a over UTF-16 units, finds a token
// by comparing units in that string. Building it is one pass over the blob (milliseconds),
// where a Map of ~150k sliced strings costs ~100 ms on a cold isolate. It has the Map methods
// the library's BPE model calls (get, has, set); `set` (added tokens) goes to an overlay
// Map that is read first, as the library's overwrite of its Map would be.

import { emptySlots, entryStarts } from "./open-slots.js";

export class VocabIndex {
  private readonly starts: Uint32Array;
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly overlay = new Map<string, number>();
  private readonly overlayLengths = new Set<number>();
  /** A token is in the blob twice (fast-form.ts refuses such a vocabulary). */
  readonly repeats: boolean = false;

  constructor(
    private readonly blob: string,
    lens: Uint32Array,
    private readonly ids: Uint32Array,
  ) {
    const n = lens.length;
    this.starts = entryStarts(lens);
    this.slots = emptySlots(n);
    this.mask = this.slots.length - 1;
    for (let e = 0; e < n; e++) {
      let h = this.hashAt(this.starts[e]!, this.starts[e + 1]!) & this.mask;
      for (let o = this.slots[h]!; o !== -1; o = this.slots[h]!) {
        if (!this.repeats && this.sameText(o, e)) this.repeats = true;
        h = (h + 1) & this.mask;
      }
      this.slots[h] = e;
    }
  }

  get size(): number {
    return this.ids.length + this.overlay.size;
  }

  get(token: string): number | undefined {
    if (typeof token !== "string") return undefined; // a Map's get of null
    // The overlay (added tokens, a few) is asked only for a token of one of its lengths.
    const o = this.overlayLengths.has(token.length) ? this.overlay.get(token) : undefined;
    if (o !== undefined) return o;
    const e = this.entry(token);
    return e < 0 ? undefined : this.ids[e];
  }

  has(token: string): boolean {
    return this.get(token) !== undefined;
  }

  set(token: string, id: number): this {
    this.overlay.set(token, id);
    this.overlayLengths.add(token.length);
    return this;
  }

  /** get(a + b), without building a + b (fast-form.ts resolves ~150k merges so). */
  getJoined(a: string, b: string): number | undefined {
    const len = a.length + b.length;
    if (this.overlayLengths.has(len)) return this.get(a + b);
    let h = 0x811c9dc5;
    for (let i = 0; i < a.length; i++) h = Math.imul(h ^ a.charCodeAt(i), 0x01000193);
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b.charCodeAt(i), 0x01000193);
    for (let s = h & this.mask; ; s = (s + 1) & this.mask) {
      const e = this.slots[s]!;
      if (e === -1) return undefined;
      const from = this.starts[e]!;
      if (this.starts[e + 1]! - from !== len) continue;
      let i = 0;
      while (i < a.length && this.blob.charCodeAt(from + i) === a.charCodeAt(i)) i++;
      if (i < a.length) continue;
      let j = 0;
      while (j < b.length && this.blob.charCodeAt(from + i + j) === b.charCodeAt(j)) j++;
      if (j === b.length) return this.ids[e];
    }
  }

  /** The model vocabulary's text of entry `e` (not the overlay). */
  text(e: number): string {
    return this.blob.slice(this.starts[e], this.starts[e + 1]);
  }

  /** Entry number of `token` in the blob, or -1. */
  private entry(token: string): number {
    const len = token.length;
    let h = 0x811c9dc5;
    for (let i = 0; i < len; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193);
    for (let s = h & this.mask; ; s = (s + 1) & this.mask) {
      const e = this.slots[s]!;
      if (e === -1) return -1;
      const from = this.starts[e]!;
      if (this.starts[e + 1]! - from !== len) continue;
      let i = 0;
      while (i < len && this.blob.charCodeAt(from + i) === token.charCodeAt(i)) i++;
      if (i === len) return e;
    }
  }

  private sameText(a: number, b: number): boolean {
    const from = this.starts[a]!;
    const len = this.starts[a + 1]! - from;
    const at = this.starts[b]!;
    if (this.starts[b + 1]! - at !== len) return false;
    let i = 0;
    while (i < len && this.blob.charCodeAt(from + i) === this.blob.charCodeAt(at + i)) i++;
    return i === len;
  }

  private hashAt(from: number, to: number): number {
    let h = 0x811c9dc5;
    for (let i = from; i < to; i++) h = Math.imul(h ^ this.blob.charCodeAt(i), 0x01000193);
    return h;
  }

  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (let e = 0; e < this.ids.length; e++) {
      const t = this.text(e);
      if (!this.overlay.has(t)) yield [t, this.ids[e]!];
    }
    yield* this.overlay;
  }

  entries(): IterableIterator<[string, number]> {
    return this[Symbol.iterator]();
  }
}
