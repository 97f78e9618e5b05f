// Relays an engine's named-event SSE stream (the Responses API's `response.*` events, the
// Anthropic Messages API's `message_*` / `content_block_*` events) event by event: each event
// may be rewritten on the way (the gateway's response id, store flags), and the stream is
// complete only once its API's final event went out. Any other ending (a body that breaks off,
// an end before the final event, an event past the size bound) becomes one error event in the
// API's own shape, then the body closes. A client that leaves cancels the leg (over HTTP,
// vLLM's abort). Unlike the chat relays, these APIs' streams are read event by event in JS:
// the gateway must see and may change their events.
import { errorText, GatewayError } from "../core/errors.js";
import { engineSuffix } from "../pd/leg-errors.js";
import type { LegStream } from "../pd/leg.js";

export interface NamedEvent {
  /** The `event:` field, when the engine sent one. */
  event: string | undefined;
  data: string;
}

export interface EventRelayEnd {
  outcome: "completed" | "failed" | "cancelled";
  status: number;
  errorCode?: string;
  /** When the first event reached the relay. */
  firstEventAt?: number;
}

export interface EventRelayOptions {
  engine: string | undefined;
  leg: "decode" | "engine";
  clientSignal: AbortSignal;
  maxEventBytes: number;
  now(): number;
  /** The event as the client gets it (the same object when unchanged). */
  onEvent(ev: NamedEvent): NamedEvent;
  /** The API's last event of a complete stream. */
  isFinal(ev: NamedEvent): boolean;
  /** The API's error event, as SSE text. */
  errorEvent(err: GatewayError): string;
  onEnd(end: EventRelayEnd): void;
}

const encoder = new TextEncoder();

export function eventRelay(leg: LegStream<Uint8Array>, o: EventRelayOptions): ReadableStream<Uint8Array> {
  const split = new EventSplitter();
  let over = false;
  let sawFinal = false;
  let sawError = false;
  let firstEventAt: number | undefined;
  const finish = (end: EventRelayEnd): void => {
    if (over) return;
    over = true;
    o.onEnd(firstEventAt === undefined ? end : { ...end, firstEventAt });
  };
  const fail = (c: ReadableStreamDefaultController<Uint8Array>, err: GatewayError): void => {
    finish({ outcome: "failed", status: err.status, errorCode: err.code });
    leg.cancel();
    c.enqueue(encoder.encode(o.errorEvent(err)));
    c.close();
  };
  const streamError = (detail: string): GatewayError =>
    new GatewayError(`${o.leg}_stream_error`, 502, `${o.leg === "decode" ? "Decode" : "Engine"} stream error: ${detail}${o.engine === undefined ? "" : engineSuffix(o.leg === "decode" ? "decode" : "regular", o.engine)}`);
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      let r: IteratorResult<Uint8Array>;
      try {
        r = await leg.next();
      } catch (err) {
        if (o.clientSignal.aborted) return void finish({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
        return fail(c, err instanceof GatewayError ? err : streamError(errorText(err)));
      }
      if (r.done) {
        // An engine's in-band error event ended the stream: the client has it; metrics record
        // a failed stream, as on the native relay.
        if (sawError) {
          finish({ outcome: "failed", status: 502, errorCode: `${o.leg}_stream_error` });
          return c.close();
        }
        if (sawFinal) {
          finish({ outcome: "completed", status: 200 });
          return c.close();
        }
        return fail(c, streamError("the stream ended before its final event"));
      }
      const events = split.push(r.value);
      if (split.pendingChars > o.maxEventBytes) {
        return fail(c, new GatewayError(`${o.leg}_event_too_large`, 502, `the engine sent an SSE event larger than ${o.maxEventBytes} bytes (bounds.max_sse_event_bytes)`));
      }
      let out = "";
      for (const ev of events) {
        firstEventAt ??= o.now();
        const sent = o.onEvent(ev);
        out += serialize(sent);
        if (o.isFinal(ev)) sawFinal = true;
        if (eventType(ev) === "error") sawError = true;
      }
      if (out !== "") c.enqueue(encoder.encode(out));
    },
    cancel() {
      finish({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
      leg.cancel();
    },
  });
}

/** An event's type: its `event:` field, else the data's "type" member (both APIs send one). */
export function eventType(e: NamedEvent): string | undefined {
  if (e.event !== undefined) return e.event;
  return /"type"\s*:\s*"([^"]+)"/.exec(e.data)?.[1];
}

function serialize(ev: NamedEvent): string {
  const data = ev.data.split("\n").map((line) => `data: ${line}\n`).join("");
  return `${ev.event === undefined ? "" : `event: ${ev.event}\n`}${data}\n`;
}

/** SSE text into events, however the bytes are cut: line ends CRLF, LF or CR; `data:` lines
 *  joined with "\n"; comments and other fields dropped. */
export class EventSplitter {
  private readonly decoder = new TextDecoder();
  private buffer = "";
  /** A CR that ended the last chunk: a line end whose LF, if any, is in the next chunk. */
  private cr = false;

  get pendingChars(): number {
    return this.buffer.length;
  }

  push(bytes: Uint8Array): NamedEvent[] {
    let text = this.decoder.decode(bytes, { stream: true });
    if (this.cr && text.startsWith("\n")) text = text.slice(1);
    this.cr = text.endsWith("\r");
    this.buffer += text.replace(/\r\n?/g, "\n");
    const events: NamedEvent[] = [];
    let end: number;
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const ev = parseBlock(block);
      if (ev) events.push(ev);
    }
    return events;
  }
}

function parseBlock(block: string): NamedEvent | undefined {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon === 0) continue; // a comment
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length === 0 ? undefined : { event, data: data.join("\n") };
}
