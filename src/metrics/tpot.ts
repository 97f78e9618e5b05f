// One TPOT definition for every surface (docs/metrics.md): time per output token of one
// sequence, between its first and last token. With n sequences decoded side by side the
// tokens of all of them arrive in that window, so the count is divided by n first.

/** Undefined unless a sequence produced more than one token. Pure. */
export function tpotMs(firstTokenAt: number, lastTokenAt: number, outputTokens: number, sequences: number): number | undefined {
  const perSequence = outputTokens / Math.max(1, sequences);
  return perSequence > 1 ? (lastTokenAt - firstTokenAt) / (perSequence - 1) : undefined;
}
