// What the native relay (native-relay.ts) watches of a Messages stream behind the client:
// usage from message_start / message_delta, output timing from content_block_delta, the final
// message_stop, an in-band `error` event (already Anthropic-shaped: the client gets vLLM's
// own), and the event-size bound. Read in batches behind the pipe, so decoding it costs the
// client nothing.
import { GatewayError } from "../../core/errors.js";
import { engineSuffix } from "../../pd/leg-errors.js";
import { EventSplitter, eventType, type NamedEvent } from "../event-relay.js";
import type { RelayEnding, StreamWatch, WatchResult } from "../stream-watch.js";

export interface MessagesStats {
  firstOutputAt?: number;
  lastOutputAt?: number;
  inputTokens?: number;
  outputTokens: number;
}

export interface MessagesWatchOptions {
  leg: "decode" | "engine";
  engine: string | undefined;
  maxEventBytes: number;
  now(): number;
  onEnd(end: RelayEnding, stats: MessagesStats): void;
}

interface Usage {
  input_tokens?: number;
  output_tokens?: number;
}

export class MessagesWatch implements StreamWatch {
  readonly stats: MessagesStats = { outputTokens: 0 };
  private readonly split = new EventSplitter();
  private final = false;
  private ended = false;

  constructor(private readonly o: MessagesWatchOptions) {}

  /** message_stop came. */
  get sawFinal(): boolean {
    return this.final;
  }

  get holding(): boolean {
    return this.split.pendingChars > 0;
  }

  /** message_start comes with vLLM's first chat chunk: its arrival is the first output's. */
  sawFirstChunk(): void {
    this.stats.firstOutputAt ??= this.o.now();
  }

  chunk(bytes: Uint8Array): WatchResult {
    const events = this.split.push(bytes);
    for (const ev of events) {
      const bad = this.see(ev);
      if (bad) return { error: { before: "", error: bad } };
    }
    if (this.split.pendingChars > this.o.maxEventBytes) {
      return { error: { before: "", error: new GatewayError(`${this.o.leg}_event_too_large`, 502, `${this.label} sent an SSE event larger than ${this.o.maxEventBytes} bytes (bounds.max_sse_event_bytes)${this.engineName}`) } };
    }
    return {};
  }

  close(): WatchResult {
    return this.final ? {} : { error: { before: "", error: this.brokenStream("the stream ended before its final event (message_stop)") } };
  }

  brokenStream(detail: string): GatewayError {
    return new GatewayError(`${this.o.leg}_stream_error`, 502, `${this.label} stream error: ${detail}${this.engineName}`);
  }

  end(e: RelayEnding): void {
    if (this.ended) return;
    this.ended = true;
    this.o.onEnd(e, this.stats);
  }

  /** One event; the in-band error's GatewayError when it is vLLM's error event. */
  private see(ev: NamedEvent): GatewayError | undefined {
    try {
      return this.seeParsed(ev);
    } catch {
      return undefined; // watched for metrics only: the client parses the event itself
    }
  }

  private seeParsed(ev: NamedEvent): GatewayError | undefined {
    const type = eventType(ev);
    if (type === "content_block_delta") {
      this.stats.lastOutputAt = this.o.now();
    } else if (type === "message_start" || type === "message_delta") {
      const json = JSON.parse(ev.data) as { message?: { usage?: Usage }; usage?: Usage };
      const usage = json.message?.usage ?? json.usage;
      if (typeof usage?.input_tokens === "number") this.stats.inputTokens = usage.input_tokens;
      if (typeof usage?.output_tokens === "number") this.stats.outputTokens = usage.output_tokens;
    } else if (type === "message_stop") {
      this.final = true;
    } else if (type === "error") {
      const message = (JSON.parse(ev.data) as { error?: { message?: unknown } }).error?.message;
      return this.brokenStream(typeof message === "string" ? message : "the engine sent an error event");
    }
    return undefined;
  }

  private get label(): string {
    return this.o.leg === "decode" ? "Decode" : "Engine";
  }

  private get engineName(): string {
    return this.o.engine === undefined ? "" : engineSuffix(this.o.leg === "decode" ? "decode" : "regular", this.o.engine);
  }
}
