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
    if (nonEmpty(ch.text) || nonEmpty(delta.content) || nonEmpty(delta.reasoning_content) || Array.isArray(delta.tool_calls)) n++;
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
