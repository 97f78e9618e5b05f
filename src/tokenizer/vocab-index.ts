// A BPE vocabulary looked up in place (fast-form.ts): the tokens stay one string, and an
// open-addressing table of entry numbers, hashed by FNV-1a over UTF-16 units, finds a token
// by comparing units in that string. Building it is one pass over the blob (milliseconds),
// where a Map of ~150k sliced strings costs ~100 ms on a cold isolate. It has the Map methods
// the library's BPE model calls (get, has, set); `set` (added tokens) goes to an overlay
// Map that is read first, as the library's overwrite of its Map would be.

export class VocabIndex {
  private readonly starts: Uint32Array;
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly overlay = new Map<string, number>();

  constructor(
    private readonly blob: string,
    lens: Uint32Array,
    private readonly ids: Uint32Array,
  ) {
    const n = lens.length;
    this.starts = new Uint32Array(n + 1);
    for (let i = 0; i < n; i++) this.starts[i + 1] = this.starts[i]! + lens[i]!;
    let cap = 16;
    while (cap < n * 2) cap *= 2;
    this.mask = cap - 1;
    this.slots = new Int32Array(cap).fill(-1);
    for (let e = 0; e < n; e++) {
      let h = this.hashAt(this.starts[e]!, this.starts[e + 1]!) & this.mask;
      while (this.slots[h] !== -1) h = (h + 1) & this.mask;
      this.slots[h] = e;
    }
  }

  get size(): number {
    return this.ids.length + this.overlay.size;
  }

  get(token: string): number | undefined {
    const o = this.overlay.get(token);
    if (o !== undefined || typeof token !== "string") return o; // a Map's get of null: undefined
    const e = this.entry(token);
    return e < 0 ? undefined : this.ids[e];
  }

  has(token: string): boolean {
    return this.get(token) !== undefined;
  }

  set(token: string, id: number): this {
    this.overlay.set(token, id);
    return this;
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
