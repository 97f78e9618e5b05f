// What the SSE relay watches in an engine's stream, apart from how the bytes move: complete
// events only (an incomplete one is held until its end arrives), TTFT and the last event's
// time, usage and an output count, [DONE], and in-band errors. One per relayed stream.
import { concatBytes } from "../../core/body.js";
import { GatewayError } from "../../core/errors.js";
import { classifySseEvent, completeEventsEnd, hasDataField, outputPieces, scanEvents, splitSseEvents, usageOf, type Usage } from "./sse.js";

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

/** How a relayed stream ended, before its stats are attached; the same three for every relay. */
export type RelayEnding = Omit<RelayEnd, "stats">;
export const COMPLETED: RelayEnding = { outcome: "completed", status: 200 };
export const CANCELLED: RelayEnding = { outcome: "cancelled", status: 499, errorCode: "client_cancelled" };
export function failedWith(err: GatewayError): RelayEnding {
  return { outcome: "failed", status: err.status, errorCode: err.code };
}

export interface RelayOptions {
  /** "decode" for the PD path, "engine" for aggregated mode: the error code's prefix. */
  leg: "decode" | "engine";
  clientSignal: AbortSignal;
  now: () => number;
  onEnd(end: RelayEnd): void;
  /** Keeps work that ends after the response body (the pipe's end) in the request's life. */
  waitUntil?(promise: Promise<unknown>): void;
}

/** Bytes to send on, or the in-band error found (with the events before it, as text). */
export interface WatchResult {
  out?: Uint8Array;
  error?: { before: string; error: GatewayError };
}

export class SseWatch {
  readonly stats: RelayStats = { outputPieces: 0 };
  /** An incomplete event's first bytes. */
  private held: Uint8Array | undefined;
  private sawDone = false;
  private ended = false;

  constructor(private readonly o: RelayOptions) {}

  get over(): boolean {
    return this.ended;
  }

  /** An incomplete event's first bytes are held (not yet complete). */
  get holding(): boolean {
    return this.held !== undefined;
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
    let buf = bytes;
    if (this.held) {
      buf = concatBytes([this.held, buf], this.held.byteLength + buf.byteLength);
      this.held = undefined;
    }
    const cut = completeEventsEnd(buf);
    if (cut < buf.byteLength) this.held = buf.slice(cut);
    if (cut === 0) return {};
    const events = cut === buf.byteLength ? buf : buf.subarray(0, cut);
    const scan = scanEvents(events);
    if (scan.parse) {
      const bad = this.parseEvents(events);
      if (bad) return { error: bad };
    } else if (hasDataField(events)) {
      this.sawEvent();
      this.stats.outputPieces += scan.pieces;
    }
    return { out: events };
  }

  /** The engine's body ended: what is left to send, or the error when [DONE] never came. An
   *  incomplete last event is dropped: it is a fragment no client could parse. */
  close(): WatchResult {
    if (!this.sawDone) return { error: { before: "", error: this.streamError(502, `${this.label} stream ended before [DONE]`) } };
    const out = this.held;
    this.held = undefined;
    return out ? { out } : {};
  }

  /** The error for a body that broke off. */
  brokenStream(detail: string): GatewayError {
    return this.streamError(502, `${this.label} stream error: ${detail}`);
  }

  private get label(): string {
    return this.o.leg === "decode" ? "Decode" : "Engine";
  }

  private streamError(status: number, message: string): GatewayError {
    return new GatewayError(`${this.o.leg}_stream_error`, status, message);
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
