// Small statistics helpers: medians of repeats, percentiles of samples, ratios.

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  // Nearest-rank: the smallest sample with at least p% of the samples at or below it.
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function median(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x));
  if (v.length === 0) return NaN;
  const sorted = [...v].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  return values.reduce((a, b) => a + b, 0) / values.length;
}

export function ratio(a: number, b: number): number {
  return b === 0 || !Number.isFinite(a) || !Number.isFinite(b) ? NaN : a / b;
}

/** Rounds for JSON output: keeps 3 significant decimals without noise like 0.30000000000000004. */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The order of `items` for repeat `r`: rotated so every item goes first equally often. */
export function rotated<T>(items: readonly T[], r: number): T[] {
  const k = items.length;
  if (k === 0) return [];
  const s = ((r % k) + k) % k;
  return [...items.slice(s), ...items.slice(0, s)];
}
