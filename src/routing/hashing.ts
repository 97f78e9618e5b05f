// Stateless hashing for affinity policies: FNV-1a 64-bit and rendezvous (highest random
// weight) hashing, so every isolate maps the same key to the same engine without shared state,
// and removing an engine only moves the keys it owned.

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

export function fnv1a64(text: string): bigint {
  let h = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * FNV_PRIME) & MASK;
  }
  return h;
}

/** Index of the candidate with the highest hash(key, candidate). */
export function rendezvous(key: string, candidates: readonly string[]): number {
  let best = -1;
  let bestScore = -1n;
  candidates.forEach((c, i) => {
    const score = fnv1a64(`${key}\u0000${c}`);
    if (score > bestScore) {
      bestScore = score;
      best = i;
    }
  });
  return best;
}
