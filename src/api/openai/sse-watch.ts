// What the SSE relay watches in an engine's stream, apart from how the bytes move: complete
// events only (an incomplete one is held until its end arrives), TTFT and the last event's
// time, usage and an output count, [DONE], and in-band errors. One per relayed stream.
// Linear in the stream: an incomplete event's chunks are kept in a list and joined once, when
// the event ends, and each byte is scanned for event ends once (sse-event-ends.ts). An event
// held past `maxEventBytes` ends the stream with `<leg>_event_too_large`.
import { concatBytes } from "../../core/body.js";
import { GatewayError } from "../../core/errors.js";
import { engineSuffix } from "../../pd/leg-errors.js";
import type { RelayEnding, StreamWatch, WatchResult } from "../stream-watch.js";
import { SseEventEnds } from "./sse-event-ends.js";
import { classifySseEvent, eventStartAt, hasDataField, outputPieces, scanEvents, splitSseEvents, usageOf, type Usage } from "./sse.js";

/** Default for bounds.max_sse_event_bytes: vLLM's largest events (logprobs of a long chunk)
 *  are well below it. */
export const MAX_SSE_EVENT_BYTES = 8 * 1024 * 1024;
const LF = 0x0a;

export interface RelayStats {
  /** When the first data event arrived (TTFT). */
  firstEventAt?: number;
  lastEventAt?: number;
  usage?: Usage;
  /** Choices with output seen, ≈ output tokens. */
  outputPieces: number;
}

export interface RelayEnd {
  outcome: "completed" | "failed" | "cancelled";
  status: number;
  errorCode?: string;
  stats: RelayStats;
}

export { CANCELLED, COMPLETED, failedWith, type RelayEnding, type WatchResult } from "../stream-watch.js";

export interface RelayOptions {
  /** "decode" for the PD path, "engine" for aggregated mode: the error code's prefix. */
  leg: "decode" | "engine";
  clientSignal: AbortSignal;
  now: () => number;
  onEnd(end: RelayEnd): void;
  /** Keeps work that ends after the response body (the pipe's end) in the request's life. */
  waitUntil?(promise: Promise<unknown>): void;
  /** The engine's configured name, for error messages. */
  engine?: string;
  /** Largest event held while waiting for its end (default MAX_SSE_EVENT_BYTES). */
  maxEventBytes?: number;
}


export class SseWatch implements StreamWatch {
  readonly stats: RelayStats = { outputPieces: 0 };
  /** An incomplete event's bytes so far, as they came (copies: a batch reader reuses its
   *  buffer). */
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private readonly ends = new SseEventEnds();
  private sawDone = false;
  private ended = false;

  constructor(private readonly o: RelayOptions) {}

  get over(): boolean {
    return this.ended;
  }

  get sawFinal(): boolean {
    return this.sawDone;
  }

  /** An incomplete event's first bytes are held (not yet complete). */
  get holding(): boolean {
    return this.heldBytes > 0;
  }

  /** Bytes scanned for event ends so far: each byte once (the relay's work, for tests). */
  get scanned(): number {
    return this.ends.scanned;
  }

  /** TTFT from the first chunk's arrival, for a stream whose events are read behind it. */
  sawFirstChunk(): void {
    this.stats.firstEventAt ??= this.o.now();
  }

  /** Told once, however the stream ends. */
  end(e: RelayEnding): void {
    if (this.ended) return;
    this.ended = true;
    this.o.onEnd({ ...e, stats: this.stats });
  }

  /** A chunk from the engine: the complete events in it (with any held bytes before them). */
  chunk(bytes: Uint8Array): WatchResult {
    const base = this.heldBytes;
    const n = bytes.byteLength;
    let cut: number;
    // vLLM writes each event whole: "data: {...}\n\n" ends a chunk, and nothing is held.
    if (n >= 2 && bytes[n - 1] === LF && bytes[n - 2] === LF) {
      cut = base + n;
      this.ends.reset();
    } else {
      cut = this.ends.feed(bytes, base);
      if (cut < 0) return this.hold(bytes, "");
    }
    const inChunk = cut - base;
    const head = inChunk === n ? bytes : bytes.subarray(0, inChunk);
    const events = this.held.length === 0 ? head : concatBytes([...this.held, head], cut);
    this.held = [];
    this.heldBytes = 0;
    const r = this.look(events);
    if (inChunk < n && !r.error) {
      this.ends.rebase(cut);
      const held = this.hold(bytes.subarray(inChunk), r.out);
      if (held.error) return held;
    }
    return r;
  }

  /** Keeps an incomplete event's bytes, or ends the stream when the event outgrows the cap
   *  (`sent`: the complete events before it, which the client still gets). */
  private hold(bytes: Uint8Array, sent: Uint8Array | string | undefined): WatchResult {
    const max = this.o.maxEventBytes ?? MAX_SSE_EVENT_BYTES;
    if (this.heldBytes + bytes.byteLength > max) {
      this.held = [];
      this.heldBytes = 0;
      const before = sent === undefined ? "" : typeof sent === "string" ? sent : new TextDecoder().decode(sent);
      const error = new GatewayError(`${this.o.leg}_event_too_large`, 502, `${this.label} sent an SSE event larger than ${max} bytes (bounds.max_sse_event_bytes)${this.engineName}`);
      return { error: { before, error } };
    }
    this.held.push(bytes.slice());
    this.heldBytes += bytes.byteLength;
    return {};
  }

  /** Complete events: watched, and the bytes to send on (or the in-band error found). Only
   *  the events from the first that may need a parse on are decoded (a fast stream's last
   *  batch holds most of it before its [DONE]); the ones before it are counted unparsed. */
  private look(events: Uint8Array): WatchResult {
    const scan = scanEvents(events);
    if (!scan.parse) {
      this.sawUnparsed(events, scan.pieces);
      return { out: events };
    }
    const start = eventStartAt(events, scan.at);
    const head = events.subarray(0, start);
    // The pieces the scan counted in the parsed event's own bytes before `at` are parsed again.
    if (start > 0) this.sawUnparsed(head, scan.pieces - scanEvents(events.subarray(start, scan.at)).pieces);
    const bad = this.parseEvents(events.subarray(start));
    if (bad) return { error: { before: new TextDecoder().decode(head) + bad.before, error: bad.error } };
    return { out: events };
  }

  private sawUnparsed(events: Uint8Array, pieces: number): void {
    if (!hasDataField(events)) return;
    this.sawEvent();
    this.stats.outputPieces += pieces;
  }

  /** The engine's body ended: what is left to send, or the error when [DONE] never came. An
   *  incomplete last event is dropped: it is a fragment no client could parse. */
  close(): WatchResult {
    if (!this.sawDone) return { error: { before: "", error: this.streamError(502, `${this.label} stream ended before [DONE]`) } };
    const out = this.heldBytes > 0 ? concatBytes(this.held, this.heldBytes) : undefined;
    this.held = [];
    this.heldBytes = 0;
    return out ? { out } : {};
  }

  /** The error for a body that broke off. */
  brokenStream(detail: string): GatewayError {
    return this.streamError(502, `${this.label} stream error: ${detail}`);
  }

  private get label(): string {
    return this.o.leg === "decode" ? "Decode" : "Engine";
  }

  /** " (decode engine 'decode-0')", when the relay knows the engine. */
  private get engineName(): string {
    return this.o.engine === undefined ? "" : engineSuffix(this.o.leg === "decode" ? "decode" : "regular", this.o.engine);
  }

  private streamError(status: number, message: string): GatewayError {
    return new GatewayError(`${this.o.leg}_stream_error`, status, `${message}${this.engineName}`);
  }

  private sawEvent(): void {
    const t = this.o.now();
    this.stats.firstEventAt ??= t;
    this.stats.lastEventAt = t;
  }

  /** The slow path: decode and classify each event. */
  private parseEvents(events: Uint8Array): { before: string; error: GatewayError } | undefined {
    const text = new TextDecoder().decode(events);
    let before = "";
    for (const event of splitSseEvents(text).events) {
      const kind = classifySseEvent(event);
      if (kind.kind === "error") return { before, error: this.streamError(kind.status, kind.message) };
      if (kind.kind === "done") this.sawDone = true;
      else if (kind.kind === "chunk") {
        this.sawEvent();
        this.stats.outputPieces += outputPieces(kind.json);
        const u = usageOf(kind.json);
        if (u) this.stats.usage = u;
      }
      before += event;
    }
    return undefined;
  }
}
