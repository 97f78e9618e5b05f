// A byte scanner for the 5-byte envelopes of Connect streaming and gRPC-web bodies (flag byte,
// 4-byte big-endian length, payload), fed chunk by chunk as they arrive, with frames split
// across chunks anywhere. It reads headers and, for each message, the payload's first byte
// (the protobuf tag of the message's first field); payloads are copied out only for frames
// the sink asks for. Why: the raw relay must watch frames without decoding them. A frame whole
// in one chunk (the usual case) is read straight off the chunk, its payload lent as a view of
// it: no per-frame copy or allocation. Pure.

export const ENVELOPE_HEADER_BYTES = 5;
export const COMPRESSED_FLAG = 0x01;
/** The largest message the gateway takes from an engine (a declared length is otherwise up to
 *  4 GiB, and would be buffered or allocated before its bytes arrive). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

export interface EnvelopeSink {
  /** A frame's header (and first payload byte: `tag`, -1 for an empty payload) was read.
   *  Return true to be handed its whole payload (`payload`). */
  frame(flags: number, length: number, tag: number): boolean;
  /** `data` may be a view of the pushed chunk, valid during the call only: copy to keep it. */
  payload(flags: number, data: Uint8Array): void;
}

export class EnvelopeScanner {
  private readonly header = new Uint8Array(ENVELOPE_HEADER_BYTES);
  private headerHave = 0;
  /** Payload bytes of the current frame not yet seen (0: between frames or in a header). */
  private remaining = 0;
  private length = 0;
  private flags = 0;
  private tagPending = false;
  private collected: Uint8Array | undefined;
  private wholeEnd = 0;

  constructor(private readonly sink: EnvelopeSink) {}

  /** True between frames: a body that ends now ended on a frame boundary. */
  get atBoundary(): boolean {
    return this.headerHave === 0 && this.remaining === 0 && !this.tagPending;
  }

  /** Scans one chunk. With `startFlag`, returns the offset in `chunk` of the first frame
   *  header whose flags have any of its bits (-1 when none starts here). */
  push(chunk: Uint8Array, startFlag = 0): number {
    let found = -1;
    let frameStart = -1;
    const n = chunk.length;
    for (let i = 0; i < n; ) {
      if (this.remaining === 0 && !this.tagPending) {
        if (this.headerHave === 0) {
          frameStart = i;
          if (found < 0 && (chunk[i]! & startFlag) !== 0) found = i;
          if (i + ENVELOPE_HEADER_BYTES <= n) {
            i = this.wholeHeader(chunk, i);
            continue;
          }
        }
        i = this.readHeader(chunk, i);
      } else {
        i = this.readPayload(chunk, i);
      }
    }
    this.wholeEnd = this.atBoundary ? chunk.length : frameStart;
    return found;
  }

  /** A header whole in the chunk, and the frame's payload too when it is there (lent). */
  private wholeHeader(chunk: Uint8Array, at: number): number {
    const flags = chunk[at]!;
    const length = ((chunk[at + 1]! << 24) | (chunk[at + 2]! << 16) | (chunk[at + 3]! << 8) | chunk[at + 4]!) >>> 0;
    const from = at + ENVELOPE_HEADER_BYTES;
    this.flags = flags;
    this.length = length;
    if (length === 0) {
      this.announce(-1);
      return from;
    }
    if (from + length > chunk.length) {
      this.remaining = length;
      this.tagPending = true;
      return from;
    }
    if (this.sink.frame(flags, length, chunk[from]!)) this.sink.payload(flags, chunk.subarray(from, from + length));
    return from + length;
  }

  /** After push: where in that chunk the frames it completed end (the frame under way
   *  starts there), or -1 when the frame under way began in an earlier chunk. */
  get wholeUpTo(): number {
    return this.wholeEnd;
  }

  private readHeader(chunk: Uint8Array, at: number): number {
    const n = Math.min(ENVELOPE_HEADER_BYTES - this.headerHave, chunk.length - at);
    this.header.set(chunk.subarray(at, at + n), this.headerHave);
    this.headerHave += n;
    if (this.headerHave < ENVELOPE_HEADER_BYTES) return at + n;
    const h = this.header;
    this.flags = h[0]!;
    this.length = ((h[1]! << 24) | (h[2]! << 16) | (h[3]! << 8) | h[4]!) >>> 0;
    if (this.length === 0) this.announce(-1);
    else {
      this.remaining = this.length;
      this.tagPending = true;
    }
    return at + n;
  }

  private readPayload(chunk: Uint8Array, at: number): number {
    if (this.tagPending) {
      this.tagPending = false;
      if (this.sink.frame(this.flags, this.length, chunk[at]!)) this.collected = new Uint8Array(this.length);
    }
    const n = Math.min(this.remaining, chunk.length - at);
    this.collected?.set(chunk.subarray(at, at + n), this.length - this.remaining);
    this.remaining -= n;
    if (this.remaining === 0) this.frameDone();
    return at + n;
  }

  /** An empty frame is announced and finished at once. */
  private announce(tag: number): void {
    if (this.sink.frame(this.flags, 0, tag)) this.collected = new Uint8Array(0);
    this.frameDone();
  }

  private frameDone(): void {
    const data = this.collected;
    this.collected = undefined;
    this.headerHave = 0;
    if (data) this.sink.payload(this.flags, data);
  }
}

/** The protobuf tag byte of a length-delimited field 1..15 (wire type 2). */
export function lengthDelimitedTag(field: number): number {
  return (field << 3) | 2;
}
