// The usage of a GenerateResponse `chunk` read off its protobuf bytes, without decoding the
// message: the raw relay counts every chunk's tokens (a streamed request's usage is the sum
// of its chunks' deltas, core/usage.ts) but decodes chunks only until the first token. Reads
// the token ids (packed or not), prompt_tokens, cached_tokens and index; skips the rest
// (logprobs). Undefined for bytes that are not a well-formed chunk. Pure.
import type { UsageFrame } from "../../core/usage.js";

// proto/vllm_engine.proto: GenerateResponse.chunk = 1; GenerateStreamChunk fields.
const RESPONSE_CHUNK = 1;
const TOKEN_IDS = 1;
const PROMPT_TOKENS = 2;
const CACHED_TOKENS = 4;
const INDEX = 7;

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

interface Cursor {
  at: number;
}

/** A varint's low 32 bits (the fields read are uint32); -1 past `end` or over 10 bytes. */
function varint(b: Uint8Array, c: Cursor, end: number): number {
  let v = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (c.at >= end) return -1;
    const byte = b[c.at++]!;
    if (shift < 32) v |= (byte & 0x7f) << shift;
    if (byte < 0x80) return v >>> 0;
  }
  return -1;
}

/** Skips one field's value; false when it runs past `end` or the wire type is unknown. */
function skip(b: Uint8Array, c: Cursor, end: number, wire: number): boolean {
  if (wire === VARINT) return varint(b, c, end) >= 0;
  if (wire === I64) c.at += 8;
  else if (wire === I32) c.at += 4;
  else if (wire === LEN) {
    const n = varint(b, c, end);
    if (n < 0) return false;
    c.at += n;
  } else return false;
  return c.at <= end;
}

type ChunkUsage = Extract<UsageFrame, { kind: "chunk" }>;

export function chunkUsage(payload: Uint8Array): ChunkUsage | undefined {
  const f: ChunkUsage = { kind: "chunk", index: 0, tokens: 0, promptTokens: 0, cachedTokens: 0 };
  const c: Cursor = { at: 0 };
  let found = false;
  while (c.at < payload.length) {
    const key = varint(payload, c, payload.length);
    if (key < 0) return undefined;
    if (key >>> 3 === RESPONSE_CHUNK && (key & 7) === LEN) {
      const n = varint(payload, c, payload.length);
      if (n < 0 || c.at + n > payload.length || !readChunk(payload, c, c.at + n, f)) return undefined;
      found = true;
    } else if (!skip(payload, c, payload.length, key & 7)) return undefined;
  }
  return found ? f : undefined;
}

/** GenerateStreamChunk's fields in [c.at, end) into `f` (an embedded message seen twice merges). */
function readChunk(b: Uint8Array, c: Cursor, end: number, f: ChunkUsage): boolean {
  while (c.at < end) {
    const key = varint(b, c, end);
    if (key < 0) return false;
    const field = key >>> 3;
    const wire = key & 7;
    if (field === TOKEN_IDS && wire === LEN) {
      const n = varint(b, c, end);
      if (n < 0 || c.at + n > end) return false;
      // Packed uint32s: one varint ends at each byte below 0x80.
      for (const stop = c.at + n; c.at < stop; c.at++) if (b[c.at]! < 0x80) f.tokens++;
    } else if (wire === VARINT && (field === TOKEN_IDS || field === PROMPT_TOKENS || field === CACHED_TOKENS || field === INDEX)) {
      const v = varint(b, c, end);
      if (v < 0) return false;
      if (field === TOKEN_IDS) f.tokens++;
      else if (field === PROMPT_TOKENS) f.promptTokens = v;
      else if (field === CACHED_TOKENS) f.cachedTokens = v;
      else f.index = v;
    } else if (!skip(b, c, end, wire)) return false;
  }
  return c.at === end;
}
