// Where SSE events end, found incrementally: each byte of an engine's stream is looked at once,
// however the stream is cut into chunks and however long one event runs. The rules are
// completeEventsEnd's (sse.ts): an event ends at two consecutive line ends (CRLF, LF or a lone
// CR), and a CR is a line end of its own only when no LF follows, so a CR that ends a chunk
// waits for the next byte. Positions are absolute within the bytes held since the last cut;
// `rebase` moves them when the held bytes up to a cut are handed on.
const LF = 0x0a;
const CR = 0x0d;

export class SseEventEnds {
  /** Where the last line end ended, when it did not end an event (-1: none). */
  private prevEnd = -1;
  /** A CR at this position whose line end is not known yet (-1: none). */
  private crAt = -1;
  /** Bytes looked at, over the stream's life (the relay's work, for tests). */
  scanned = 0;

  /** Feeds the bytes found at `base`; returns the position just past the last event end
   *  among them, or -1. */
  feed(b: Uint8Array, base: number): number {
    const n = b.length;
    this.scanned += n;
    let cut = -1;
    let i = 0;
    if (this.crAt >= 0 && n > 0) {
      const start = this.crAt;
      this.crAt = -1;
      if (b[0] === LF) {
        cut = this.lineEnd(start, base + 1, cut);
        i = 1;
      } else cut = this.lineEnd(start, base, cut);
    }
    // Native scans for the next LF and CR: a long event costs no JavaScript per byte.
    let lf = b.indexOf(LF, i);
    let cr = b.indexOf(CR, i);
    while (lf >= 0 || cr >= 0) {
      if (cr < 0 || (lf >= 0 && lf < cr)) {
        cut = this.lineEnd(base + lf, base + lf + 1, cut);
        lf = b.indexOf(LF, lf + 1);
        continue;
      }
      if (cr + 1 === n) {
        this.crAt = base + cr; // an LF may follow in the next chunk
        break;
      }
      const crlf = b[cr + 1] === LF;
      cut = this.lineEnd(base + cr, base + cr + (crlf ? 2 : 1), cut);
      if (crlf) lf = b.indexOf(LF, cr + 2);
      cr = b.indexOf(CR, cr + 1);
    }
    return cut;
  }

  /** The held bytes up to `cut` were handed on: positions now count from there. */
  rebase(cut: number): void {
    if (this.prevEnd >= 0) this.prevEnd -= cut;
    if (this.crAt >= 0) this.crAt -= cut;
  }

  /** Everything so far was complete (vLLM's usual chunk: whole events). */
  reset(): void {
    this.prevEnd = -1;
    this.crAt = -1;
  }

  private lineEnd(start: number, end: number, cut: number): number {
    if (this.prevEnd === start) {
      this.prevEnd = -1;
      return end;
    }
    this.prevEnd = end;
    return cut;
  }
}
