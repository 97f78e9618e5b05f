// The parts every open-addressing table of the tokenizer shares (vocab-index.ts,
// text-merges.ts, bpe-merge.ts): ~150k entries hashed into typed arrays, where a Map of
// strings would cost a cold isolate ~100 ms.

/** The slots of a table for `entries` entries: a power of two at least twice as many (probes
 *  stay short; `length - 1` is the mask), all empty (-1). */
export function emptySlots(entries: number): Int32Array {
  let cap = 16;
  while (cap < entries * 2) cap *= 2;
  return new Int32Array(cap).fill(-1);
}

/** Where each entry of a blob of entries laid end to end starts: entry e is
 *  [starts[e], starts[e + 1]). */
export function entryStarts(lens: Uint32Array): Uint32Array {
  const starts = new Uint32Array(lens.length + 1);
  for (let i = 0; i < lens.length; i++) starts[i + 1] = starts[i]! + lens[i]!;
  return starts;
}
