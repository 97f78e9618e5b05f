// Splits an engine's SSE bytes into events without decoding them: each complete event is a
// byte range and its `event:` type, read off the first line. A relay passes the ranges of the
// events it need not read as the engine's own bytes, and decodes only the others; a stream of
// small delta events then costs about what copying it does. Events must end with "\n\n" (what
// vLLM and uvicorn write): a stream with a CR in it is the caller's to read as text
// (takeHeld hands over what is held).
import { concatBytes } from "../core/body.js";

const LF = 10;
const EVENT_PREFIX = [101, 118, 101, 110, 116, 58]; // "event:"

export interface EventRange {
  /** The bytes the range is in (the chunk, or the chunk joined to held bytes). */
  bytes: Uint8Array;
  start: number;
  /** Just past the event's blank line. */
  end: number;
  /** The `event:` field, when the event starts with one. */
  type: string | undefined;
}

export class EventBytesSplitter {
  /** The start of an event that has not ended yet, as it came (joined once it ends). */
  private held: Uint8Array[] = [];
  private heldBytes = 0;

  /** Bytes held back as part of an event that has not ended yet. */
  get pendingBytes(): number {
    return this.heldBytes;
  }

  /** The events `chunk` completes. Each byte is searched once, however an event is cut. */
  push(chunk: Uint8Array): EventRange[] {
    const out: EventRange[] = [];
    let start = 0;
    if (this.heldBytes > 0) {
      const last = this.held.at(-1)!;
      const end = last[last.length - 1] === LF && chunk[0] === LF ? 1 : blankLineEnd(chunk, 0);
      if (end < 0) {
        this.hold(chunk);
        return out;
      }
      const size = this.heldBytes + end;
      const bytes = concatBytes([...this.takeHeld(), chunk.subarray(0, end)], size);
      out.push({ bytes, start: 0, end: bytes.length, type: typeOf(bytes, 0, bytes.length - 2) });
      start = end;
    }
    for (let end = blankLineEnd(chunk, start); end >= 0; end = blankLineEnd(chunk, start)) {
      out.push({ bytes: chunk, start, end, type: typeOf(chunk, start, end - 2) });
      start = end;
    }
    if (start < chunk.length) this.hold(chunk.subarray(start));
    return out;
  }

  /** What is held, as it came; the splitter holds nothing after. */
  takeHeld(): Uint8Array[] {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    return held;
  }

  private hold(bytes: Uint8Array): void {
    this.held.push(bytes);
    this.heldBytes += bytes.length;
  }
}

/** Just past the first LF LF at or after `from`, or -1. */
function blankLineEnd(bytes: Uint8Array, from: number): number {
  for (let at = bytes.indexOf(LF, from); at >= 0; at = bytes.indexOf(LF, at + 1)) {
    if (at + 1 >= bytes.length) return -1;
    if (bytes[at + 1] === LF) return at + 2;
  }
  return -1;
}

/** The value of an `event:` first line, ASCII only; else undefined. */
function typeOf(bytes: Uint8Array, start: number, blank: number): string | undefined {
  if (blank - start < EVENT_PREFIX.length) return undefined;
  for (let i = 0; i < EVENT_PREFIX.length; i++) if (bytes[start + i] !== EVENT_PREFIX[i]) return undefined;
  let from = start + EVENT_PREFIX.length;
  if (bytes[from] === 32) from++;
  const lineEnd = bytes.indexOf(LF, from);
  const to = lineEnd < 0 || lineEnd > blank ? blank : lineEnd;
  let type = "";
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    if (b >= 128) return undefined;
    type += String.fromCharCode(b);
  }
  return type;
}
