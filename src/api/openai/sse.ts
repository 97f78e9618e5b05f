// Server-sent events as vLLM's OpenAI server writes them, read on the side of the relay: where
// each event ends, what its data is, whether it is the [DONE] marker, an in-band error, or a
// chunk (for TTFT, usage and a token count). Pure.

export interface SseSplit {
  /** Complete events, each with its terminating blank line, as received. */
  events: string[];
  /** The incomplete tail, to be completed by later bytes. */
  rest: string;
}

// A CR counts as a line end only when no LF follows it (CRLF is one line end, not two).
const EVENT_END = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))/g;

export function splitSseEvents(buffer: string): SseSplit {
  const events: string[] = [];
  let from = 0;
  EVENT_END.lastIndex = 0;
  for (let m = EVENT_END.exec(buffer); m !== null; m = EVENT_END.exec(buffer)) {
    const end = m.index + m[0].length;
    // A lone "\r" at the very end may be the first half of "\r\n": wait for more bytes.
    if (end === buffer.length && buffer.endsWith("\r")) break;
    events.push(buffer.slice(from, end));
    from = end;
  }
  return { events, rest: buffer.slice(from) };
}

/** The event's data (data lines joined by "\n"), or undefined when it has none. */
export function sseData(event: string): string | undefined {
  const lines = event.split(/\r\n|\n|\r/).filter((l) => l.startsWith("data:"));
  if (lines.length === 0) return undefined;
  return lines.map((l) => l.slice(5).replace(/^ /, "")).join("\n");
}

export type SseEventKind =
  | { kind: "done" }
  | { kind: "error"; message: string; status: number }
  | { kind: "chunk"; json: Record<string, unknown> }
  | { kind: "other" };

export function classifySseEvent(event: string): SseEventKind {
  const data = sseData(event);
  if (data === undefined) return { kind: "other" };
  if (data.trim() === "[DONE]") return { kind: "done" };
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return { kind: "other" };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { kind: "other" };
  const o = json as Record<string, unknown>;
  if (o.error !== undefined && o.error !== null && o.choices === undefined) {
    const e = o.error as Record<string, unknown> | string;
    const message = typeof e === "string" ? e : typeof e.message === "string" ? e.message : JSON.stringify(e.message ?? e);
    // vLLM puts the HTTP status in error.code; upstream routers use error.status.
    const raw = typeof e === "object" ? (typeof e.code === "number" ? e.code : e.status) : undefined;
    const status = typeof raw === "number" && raw >= 400 && raw <= 599 ? raw : 500;
    return { kind: "error", message, status };
  }
  return { kind: "chunk", json: o };
}

/** Choices in a chunk that carry output (text, content, reasoning or a tool call): one per
 *  streamed token for vLLM, so the count approximates output tokens when no usage is sent. */
export function outputPieces(chunk: Record<string, unknown>): number {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return 0;
  let n = 0;
  for (const c of choices) {
    if (typeof c !== "object" || c === null) continue;
    const ch = c as Record<string, unknown>;
    const delta = (typeof ch.delta === "object" && ch.delta !== null ? ch.delta : {}) as Record<string, unknown>;
    if (nonEmpty(ch.text) || nonEmpty(delta.content) || nonEmpty(delta.reasoning) || nonEmpty(delta.reasoning_content) || Array.isArray(delta.tool_calls)) n++;
  }
  return n;
}

function nonEmpty(v: unknown): boolean {
  return typeof v === "string" && v !== "";
}

export interface Usage {
  promptTokens?: number;
  completionTokens?: number;
}

/** The chunk's usage (include_usage's final chunk, or continuous usage stats), if any. */
export function usageOf(chunk: Record<string, unknown>): Usage | undefined {
  const u = chunk.usage;
  if (typeof u !== "object" || u === null) return undefined;
  const o = u as Record<string, unknown>;
  const out: Usage = {};
  if (typeof o.prompt_tokens === "number") out.promptTokens = o.prompt_tokens;
  if (typeof o.completion_tokens === "number") out.completionTokens = o.completion_tokens;
  return out;
}

// ---- Byte-level scanning for the relay's fast path ----------------------------------------
// The relay forwards the engine's bytes as they are and only looks at them: where the last
// complete event ends, and whether any event may be the [DONE] marker, an in-band error or a
// usage report (those few are decoded and parsed; every other chunk is never decoded).

const LF = 0x0a;
const CR = 0x0d;

/** Index just past the last complete event in `b` (0 when none is complete yet). Same rules
 *  as splitSseEvents: an event ends at two consecutive line ends (CRLF, LF or a lone CR), and
 *  a CR at the very end may be the first half of a CRLF, so it waits for more bytes. */
export function completeEventsEnd(b: Uint8Array): number {
  const n = b.length;
  // vLLM writes each event whole: "data: {...}\n\n".
  if (n >= 2 && b[n - 1] === LF && b[n - 2] === LF) return n;
  let cut = 0;
  let prevEnd = -1;
  for (let i = 0; i < n; ) {
    const c = b[i];
    if (c !== LF && c !== CR) {
      i++;
      continue;
    }
    let e = i + 1;
    if (c === CR && e < n && b[e] === LF) e++;
    if (prevEnd === i) {
      if (e === n && b[n - 1] === CR) break;
      cut = e;
      prevEnd = -1;
    } else prevEnd = e;
    i = e;
  }
  return cut;
}

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const DONE = ascii("[DONE]");
const DATA_FIELD = ascii("data:");

/** Index of `pattern` in `b` from `from`, or -1 (native indexOf on the first byte). */
export function indexOfBytes(b: Uint8Array, pattern: Uint8Array, from = 0): number {
  const m = pattern.length;
  const last = b.length - m;
  const first = pattern[0]!;
  for (let i = b.indexOf(first, from); i >= 0 && i <= last; i = b.indexOf(first, i + 1)) {
    let j = 1;
    while (j < m && b[i + j] === pattern[j]) j++;
    if (j === m) return i;
  }
  return -1;
}

const isWs = (c: number | undefined) => c === 0x20 || c === 0x09 || c === LF || c === CR;

/** The first byte of the value of the key that ends just before `at` ("key" then ':'), or -1
 *  when no ':' follows. */
function valueAt(b: Uint8Array, at: number): number {
  let i = at;
  while (isWs(b[i])) i++;
  if (b[i] !== 0x3a) return -1;
  i++;
  while (isWs(b[i])) i++;
  return i < b.length ? i : -1;
}

/** Events that must be decoded and parsed: the [DONE] marker, an in-band error, a usage
 *  report. A false positive only costs a parse; JSON that spells these keys with escapes
 *  (`"\u0065rror"`) is not recognised (no server writes that). */
export function needsParse(events: Uint8Array): boolean {
  return scanEvents(events).parse;
}

const at = (b: Uint8Array, i: number, key: Uint8Array) => {
  if (i + key.length > b.length) return false;
  for (let j = 0; j < key.length; j++) if (b[i + j] !== key[j]) return false;
  return true;
};
const K_ERROR = ascii('error"');
const K_USAGE = ascii('usage"');
const K_TEXT = ascii('text"');
const K_TOOL_CALLS = ascii('tool_calls"');
const K_CONTENT = ascii('content"');
// vLLM sends "reasoning" today; before PR 27752 it sent "reasoning_content" (and both for a while).
const K_REASONING = ascii('reasoning"');
const K_REASONING_CONTENT = ascii('reasoning_content"');

/** What scanEvents found: the output pieces before `at`, and `at`, the byte where the first
 *  thing that may need a parse starts (-1: nothing does). */
export interface EventScan {
  parse: boolean;
  pieces: number;
  at: number;
}

/** One pass over the events' quotes: where the first thing that may need a parse is
 *  (needsParse), and the output pieces before it (countOutputPieces). Only quotes that open a
 *  member name count: preceded by `{`, `,` or whitespace, which a quote inside a JSON string
 *  (escaped) or opening a value (after `:`) never is. */
export function scanEvents(b: Uint8Array): EventScan {
  const done = indexOfBytes(b, DONE);
  const end = done >= 0 ? done : b.length;
  let pieces = 0;
  // A plain loop, not indexOf per quote: a vLLM chunk has about 26 quotes, and the native call
  // per quote made the scan of a 256-token stream 3x slower (in V8: 100 us against 33 us).
  for (let q = 0; q < end; q++) {
    if (b[q] !== 0x22) continue;
    const before = b[q - 1];
    if (before !== 0x7b && before !== 0x2c && !isWs(before)) continue;
    const k = q + 1;
    let key: Uint8Array | undefined;
    switch (b[k]) {
      case 0x65: // e
        key = K_ERROR;
        break;
      case 0x75: // u
        key = K_USAGE;
        break;
      case 0x74: // t
        key = b[k + 1] === 0x65 ? K_TEXT : K_TOOL_CALLS;
        break;
      case 0x63: // c
        key = K_CONTENT;
        break;
      case 0x72: // r
        key = at(b, k, K_REASONING) ? K_REASONING : K_REASONING_CONTENT;
        break;
      default:
        continue;
    }
    if (!at(b, k, key)) continue;
    const v = valueAt(b, k + key.length);
    if (v < 0) continue;
    const c = b[v];
    if (key === K_ERROR || key === K_USAGE) {
      if (c !== 0x6e) return { parse: true, pieces, at: q }; // not null
    } else if (key === K_TOOL_CALLS) {
      if (c === 0x5b) pieces++;
    } else if (c === 0x22 && b[v + 1] !== 0x22) pieces++;
    q = v - 1;
  }
  return done >= 0 ? { parse: true, pieces, at: done } : { parse: false, pieces, at: -1 };
}

/** Where the event holding byte `i` starts: just past the blank line before it (two line ends
 *  in a row: CRLF, LF or a lone CR), or 0. Reads back over that one event only. */
export function eventStartAt(b: Uint8Array, i: number): number {
  for (let p = Math.min(i, b.length) - 1; p > 0; p--) {
    const c = b[p];
    if (c !== LF && c !== CR) continue;
    if (c === CR && b[p + 1] === LF) continue; // the CR of a CRLF: its LF was looked at
    const prev = c === LF && b[p - 1] === CR ? p - 2 : p - 1;
    if (prev >= 0 && (b[prev] === LF || b[prev] === CR)) return p + 1;
  }
  return 0;
}

export function hasDataField(events: Uint8Array): boolean {
  return indexOfBytes(events, DATA_FIELD) >= 0;
}

/** ≈ outputPieces over every chunk in `events` without parsing them: "text", "content",
 *  "reasoning" (or the older "reasoning_content") members holding a non-empty string, and
 *  "tool_calls" arrays. A choice with two of them counts twice (the vLLM versions that sent
 *  both reasoning names over-count reasoning tokens this way). */
export function countOutputPieces(events: Uint8Array): number {
  return scanEvents(events).pieces;
}
