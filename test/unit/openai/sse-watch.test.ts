// The relay's watch is linear in the stream: a 4 MiB event cut into 4 KiB chunks is scanned
// once (counted in bytes, not timed), joined once, and passed on whole; an event held past the
// cap ends the stream with `<leg>_event_too_large` naming the engine. The incremental event-end
// scanner cuts exactly where the string splitter (splitSseEvents) cuts, however the bytes are
// split. (completeEventsEnd takes a whole chunk ending in "\n\n" as complete, a stray third
// line end included; the watch keeps that shortcut for vLLM's whole-event chunks.)
import { describe, expect, it } from "vitest";
import { splitSseEvents } from "../../../src/api/openai/sse.js";
import { SseEventEnds } from "../../../src/api/openai/sse-event-ends.js";
import { SseWatch, type RelayEnd } from "../../../src/api/openai/sse-watch.js";

const enc = new TextEncoder();
const MiB = 1024 * 1024;

function watch(o: { engine?: string; maxEventBytes?: number } = {}) {
  const ends: RelayEnd[] = [];
  const w = new SseWatch({ leg: "decode", clientSignal: new AbortController().signal, now: () => 1, onEnd: (e) => ends.push(e), ...o });
  return { w, ends };
}

/** One vLLM-style event whose JSON is about `size` bytes (a long logprobs list). */
function bigEvent(size: number): Uint8Array {
  const head = '{"choices":[{"index":0,"text":"x","logprobs":{"tokens":[';
  const items = '"tok",'.repeat(Math.ceil(size / 6));
  return enc.encode(`data: ${head}${items}"end"]}}]}\n\n`);
}

function chunks(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

describe("SseWatch: linear in the event's size", () => {
  it("a 4 MiB event in 4 KiB chunks: each byte scanned once, the event passed on whole once it ends", () => {
    const event = bigEvent(4 * MiB);
    const { w } = watch();
    const out: Uint8Array[] = [];
    const parts = chunks(event, 4096);
    for (const c of parts) {
      const r = w.chunk(c);
      expect(r.error).toBeUndefined();
      if (r.out) out.push(r.out);
    }
    // Before: every chunk re-joined the held bytes and rescanned them from byte 0, about
    // size^2 / (2 * 4 KiB) = 2 GiB scanned for this event.
    expect(w.scanned).toBeLessThanOrEqual(event.length);
    expect(out).toHaveLength(1);
    expect(Buffer.from(out[0]!).equals(Buffer.from(event))).toBe(true);
    expect(w.stats.outputPieces).toBe(1);
  });

  it("the work grows with the bytes, not with their square", () => {
    const scannedFor = (size: number) => {
      const { w } = watch();
      for (const c of chunks(bigEvent(size), 1024)) w.chunk(c);
      return w.scanned;
    };
    const small = scannedFor(256 * 1024);
    const big = scannedFor(2 * MiB);
    expect(big / small).toBeLessThan(8.5); // 8x the bytes
  });

  it("a chunk that ends a held event and starts the next holds only the new tail", () => {
    const { w } = watch();
    expect(w.chunk(enc.encode('data: {"choices":[{"text":"a"'))).toEqual({});
    const r = w.chunk(enc.encode('}]}\n\ndata: {"choi'));
    expect(new TextDecoder().decode(r.out)).toBe('data: {"choices":[{"text":"a"}]}\n\n');
    expect(w.holding).toBe(true);
    const last = w.chunk(enc.encode('ces":[{"text":"b"}]}\n\ndata: [DONE]\n\n'));
    expect(new TextDecoder().decode(last.out)).toBe('data: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n');
    expect(w.holding).toBe(false);
    expect(w.close()).toEqual({});
  });
});

describe("SseWatch: the event size cap", () => {
  it("an event with no end past the cap is decode_event_too_large naming the engine, and nothing more is held", () => {
    const { w } = watch({ engine: "decode-0", maxEventBytes: MiB });
    const event = bigEvent(2 * MiB).subarray(0, 2 * MiB); // no terminator
    let error: { before: string; error: { code: string; status: number; message: string } } | undefined;
    let fed = 0;
    for (const c of chunks(event, 64 * 1024)) {
      const r = w.chunk(c);
      fed += c.length;
      if (r.error) {
        error = r.error;
        break;
      }
    }
    expect(error?.error.code).toBe("decode_event_too_large");
    expect(error?.error.status).toBe(502);
    expect(error?.error.message).toBe("Decode sent an SSE event larger than 1048576 bytes (bounds.max_sse_event_bytes) (decode engine 'decode-0')");
    expect(fed).toBe(MiB + 64 * 1024); // refused with the first chunk past the cap
    expect(w.holding).toBe(false);
  });

  it("complete events before the oversized one still go out, as the error's `before`", () => {
    const { w } = watch({ maxEventBytes: 1024 });
    const r = w.chunk(enc.encode(`data: {"choices":[{"text":"a"}]}\n\ndata: ${"x".repeat(2000)}`));
    expect(r.error?.error.code).toBe("decode_event_too_large");
    expect(r.error?.before).toBe('data: {"choices":[{"text":"a"}]}\n\n');
  });

  it("an event just under the cap passes", () => {
    const event = bigEvent(100_000);
    const { w } = watch({ maxEventBytes: event.length });
    let out = 0;
    for (const c of chunks(event, 1000)) out += w.chunk(c).out?.length ?? 0;
    expect(out).toBe(event.length);
  });
});

describe("SseEventEnds: the same cuts as splitSseEvents, however the bytes are split", () => {
  const texts = ["data: a\n\ndata: b\n\n", "data: a\n\ndata: b", "data: a\r\n\r\ndata: b\r\n", "data: a\r\n\r", "data: a\r\rdata: b", 'data: {"partial', "a\r\n\rb\n\r\nc\r\r\n\n", "\n\n\n\n", "x\r\n\r\ny\n\nz", "a\n\r\n\r\n\rb"];
  it.each(texts)("%j", (text) => {
    const bytes = enc.encode(text);
    // Every split into two or three pieces (1-byte pieces included).
    for (let i = 0; i <= bytes.length; i++) {
      for (let j = i; j <= bytes.length; j++) {
        const ends = new SseEventEnds();
        let cut = 0;
        for (const [from, to] of [[0, i], [i, j], [j, bytes.length]] as const) {
          const c = ends.feed(bytes.subarray(from, to), from);
          if (c >= 0) cut = c;
        }
        expect([i, j, cut]).toEqual([i, j, splitSseEvents(text).events.join("").length]);
      }
    }
  });
});

describe("SseWatch: a batch is watched as its events one by one would be", () => {
  // A fast stream's batches hold many events; only those from the first that may need a parse
  // on are decoded. Whatever the batch, the stats and the error match feeding the events singly.
  const ev = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const tok = (t: string) => ev({ id: "c", object: "text_completion", choices: [{ index: 0, text: t, logprobs: null, finish_reason: null }] });
  const toks = Array.from({ length: 40 }, (_, i) => tok(` t${i}`)).join("");
  const streams: [string, string][] = [
    ["tokens then [DONE]", `${toks}data: [DONE]\n\n`],
    ["tokens, usage, [DONE]", `${toks}${ev({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 40 } })}data: [DONE]\n\n`],
    ["a token and its usage in one event (continuous usage stats)", `${toks}${ev({ choices: [{ index: 0, text: " last" }], usage: { prompt_tokens: 3, completion_tokens: 41 } })}data: [DONE]\n\n`],
    ["an in-band error after tokens", `${toks}${ev({ error: { message: "boom", code: 500 } })}${tok(" after")}data: [DONE]\n\n`],
    ["[DONE] first", `data: [DONE]\n\n${toks}`],
    ["CRLF events", `${toks.replace(/\n/g, "\r\n")}data: [DONE]\r\n\r\n`],
    ["a token that reads [DONE]", `${tok("[DONE]")}${toks}data: [DONE]\n\n`],
  ];
  const run = (events: string[]) => {
    const { w } = watch();
    for (const e of events) {
      const r = w.chunk(enc.encode(e));
      if (r.error) return { seen: { stats: w.stats, done: w.sawFinal, error: r.error.error.message }, before: r.error.before };
    }
    return { seen: { stats: w.stats, done: w.sawFinal } };
  };
  it.each(streams)("%s", (_name, text) => {
    const events = splitSseEvents(text).events;
    const single = run(events);
    const batch = run([text]);
    expect(batch.seen).toEqual(single.seen);
    // Fed singly, no event precedes the error in its chunk; in the batch, all before it do.
    if (single.before !== undefined) expect(batch.before).toBe(events.slice(0, events.findIndex((e) => e.includes('"error"'))).join(""));
    expect(batch.seen.stats.outputPieces).toBeGreaterThan(0);
  });
});
