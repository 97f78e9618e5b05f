// BPE merges over one long word, as HF's Rust tokenizer does them (models/bpe/word.rs
// `merge_all`): every adjacent pair with a merge goes into a priority queue ordered by merge
// rank, then by position (the leftmost of equal ranks first); the best pair is merged, stale
// entries are skipped, and the new symbol's pairs with its neighbours are queued. Same order,
// so the same ids. Why our own: @huggingface/tokenizers runs the same algorithm on objects and
// strings (a node object, a spread copy and a concatenated string per merge), which costs
// about 10 µs and hundreds of bytes per character of a long word (1 MB of spaces: 13 s and
// gigabytes of garbage). Here a word is typed arrays (about 20 bytes per character) and a
// merge is a few integer operations. `step` runs a bounded number of merges, so a caller can
// yield between slices of one huge word.

import { emptySlots } from "./open-slots.js";

const BUILD_SLICE = 4096;

/** What WordMerge needs of a model's merges. */
export interface MergeLookup {
  /** The pair's merge rank, or -1 when the pair does not merge. */
  rank(left: number, right: number): number;
  /** The merged symbol's id of merge `rank`. */
  merged(rank: number): number;
}

/** Merges given as id triples (left, right, merged) in rank order, pairs distinct
 *  (fast-form.ts): an open-addressing table of ranks over them, built in one pass. */
export class IdMergeTable implements MergeLookup {
  private readonly slots: Int32Array;
  private readonly mask: number;
  /** A pair appears twice (its first rank is found; fast-form.ts refuses such merges). */
  readonly repeats: boolean = false;

  constructor(private readonly merges: Uint32Array) {
    const n = merges.length / 3;
    this.slots = emptySlots(n);
    this.mask = this.slots.length - 1;
    for (let rank = 0; rank < n; rank++) {
      const left = merges[3 * rank]!;
      const right = merges[3 * rank + 1]!;
      let h = pairHash(left, right) & this.mask;
      for (let r = this.slots[h]!; r !== -1; r = this.slots[h]!) {
        if (merges[3 * r] === left && merges[3 * r + 1] === right) this.repeats = true;
        h = (h + 1) & this.mask;
      }
      this.slots[h] = rank;
    }
  }

  merged(rank: number): number {
    return this.merges[3 * rank + 2]!;
  }

  rank(left: number, right: number): number {
    const m = this.merges;
    for (let h = pairHash(left, right) & this.mask; ; h = (h + 1) & this.mask) {
      const r = this.slots[h]!;
      if (r === -1 || (m[3 * r] === left && m[3 * r + 1] === right)) return r;
    }
  }
}

function pairHash(left: number, right: number): number {
  return Math.imul(left ^ Math.imul(right, 0x9e3779b1), 0x85ebca6b) ^ (left >>> 7);
}

/** The model's merges by pair of ids: rank and the merged symbol's id. */
export class MergeTable implements MergeLookup {
  private readonly byPair = new Map<number, number>();
  /** The merged symbol's id, by rank. */
  readonly newIdOfRank: Int32Array;

  /** `merges[rank] = [left, right]` as vocab strings. Undefined when a merge names a string
   *  that is not in the vocabulary (the Rust tokenizer refuses such a model). Yields the
   *  merges read every BUILD_SLICE (a large vocabulary takes a few hundred ms). */
  static *build(merges: readonly (readonly [string, string])[], idOf: (token: string) => number | undefined, vocabSize: number): Generator<number, MergeTable | undefined> {
    const t = new MergeTable(merges.length, vocabSize);
    for (let rank = 0; rank < merges.length; rank++) {
      if (rank % BUILD_SLICE === BUILD_SLICE - 1) yield BUILD_SLICE;
      const [a, b] = merges[rank]!;
      const left = idOf(a);
      const right = idOf(b);
      const merged = idOf(a + b);
      if (left === undefined || right === undefined || merged === undefined) return undefined;
      const key = t.key(left, right);
      // A repeated pair keeps its first (best) rank, as a map built in rank order by Rust.
      if (!t.byPair.has(key)) t.byPair.set(key, rank);
      t.newIdOfRank[rank] = merged;
    }
    return t;
  }

  private constructor(
    mergeCount: number,
    private readonly vocabSize: number,
  ) {
    this.newIdOfRank = new Int32Array(mergeCount);
  }

  private key(left: number, right: number): number {
    return left * this.vocabSize + right;
  }

  merged(rank: number): number {
    return this.newIdOfRank[rank]!;
  }

  /** The pair's merge rank, or -1 when the pair does not merge. */
  rank(left: number, right: number): number {
    if (left >= this.vocabSize || right >= this.vocabSize) return -1; // keys would collide
    return this.byPair.get(this.key(left, right)) ?? -1;
  }
}

/** Positions fit in 2^26 (64 Mi symbols) of a heap key `rank * 2^26 + position`. */
const POS_SPAN = 2 ** 26;
const MAX_MERGE_WORD = POS_SPAN - 1;

/** One word's merges in progress. */
export class WordMerge {
  private readonly ids: Int32Array;
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private heap: Float64Array;
  private size = 0;
  /** Symbols still alive. */
  private live: number;
  /** Initial pairs queued so far: every one is queued before the first merge. */
  private queued = 0;

  /** `ids`: the word's initial symbols (one per byte for byte-level BPE). Taken over. */
  constructor(
    ids: Int32Array,
    private readonly table: MergeLookup,
  ) {
    if (ids.length > MAX_MERGE_WORD) throw new RangeError(`a word of ${ids.length} symbols is longer than ${MAX_MERGE_WORD}`);
    const n = ids.length;
    this.ids = ids;
    this.live = n;
    this.prev = new Int32Array(n);
    this.next = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      this.prev[i] = i - 1;
      this.next[i] = i + 1 < n ? i + 1 : -1;
    }
    this.heap = new Float64Array(Math.max(16, n));
  }



  /** The number of symbols now: the word's final token count is at most this. */
  get symbols(): number {
    return this.live;
  }

  /** Runs up to `maxPops` queue entries (or queues as many initial pairs); true once no
   *  merge is left. */
  step(maxPops = Infinity): boolean {
    const { ids, prev, next, table } = this;
    const n = ids.length;
    if (this.queued < n - 1) {
      const to = Math.min(n - 1, this.queued + maxPops);
      for (let i = this.queued; i < to; i++) this.queue(i, ids[i]!, ids[i + 1]!);
      this.queued = to;
      if (to < n - 1) return false;
    }
    for (let pops = 0; pops < maxPops; pops++) {
      if (this.size === 0) return true;
      const top = this.pop();
      const rank = Math.floor(top / POS_SPAN);
      const pos = top - rank * POS_SPAN;
      if (ids[pos] === -1) continue; // merged into its left neighbour
      const right = next[pos]!;
      if (right === -1) continue;
      // A stale entry: the pair at `pos` changed since it was queued.
      if (table.rank(ids[pos]!, ids[right]!) !== rank) continue;
      ids[pos] = table.merged(rank);
      ids[right] = -1;
      this.live--;
      const after = next[right]!;
      next[pos] = after;
      if (after !== -1) prev[after] = pos;
      const before = prev[pos]!;
      if (before !== -1) this.queue(before, ids[before]!, ids[pos]!);
      if (after !== -1) this.queue(pos, ids[pos]!, ids[after]!);
    }
    return this.size === 0;
  }

  /** The word's token ids (after `step` returned true). */
  result(): number[] {
    const out: number[] = [];
    for (let i = this.ids.length > 0 ? 0 : -1; i !== -1; i = this.next[i]!) out.push(this.ids[i]!);
    return out;
  }

  private queue(pos: number, left: number, right: number): void {
    const rank = this.table.rank(left, right);
    if (rank >= 0) this.push(rank * POS_SPAN + pos);
  }

  // A binary min-heap of keys (rank, then position).
  private push(key: number): void {
    if (this.size === this.heap.length) {
      const bigger = new Float64Array(this.heap.length * 2);
      bigger.set(this.heap);
      this.heap = bigger;
    }
    const h = this.heap;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]! <= key) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = key;
  }

  private pop(): number {
    const h = this.heap;
    const top = h[0]!;
    const last = h[--this.size]!;
    let i = 0;
    const n = this.size;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && h[child + 1]! < h[child]!) child++;
      if (h[child]! >= last) break;
      h[i] = h[child]!;
      i = child;
    }
    if (n > 0) h[i] = last;
    return top;
  }
}
