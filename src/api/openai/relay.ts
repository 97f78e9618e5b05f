// Relays an engine's SSE stream to the client as the engine's own bytes, chunk by chunk as
// each event completes (no buffering beyond the event in flight), watching them on the way
// for TTFT and usage. Any way the stream can fail mid-way (an in-band error event, a broken
// connection, an end without [DONE]) becomes one final gateway error event, then the stream
// closes.
//
// Cost: a chunk is never decoded unless a byte scan (sse.ts `scanEvents`) finds something in
// it that may be the [DONE] marker, an error or a usage report; only then are its events
// decoded and parsed. The token count without usage is approximate: `countOutputPieces`
// counts non-empty "text"/"content" members and "tool_calls" arrays in the bytes (one per
// streamed token for vLLM), where the parsed path counts choices with output.
import { concatBytes } from "../../core/body.js";
import { errorText, GatewayError } from "../../core/errors.js";
import type { LegStream } from "../../pd/leg.js";
import { sseErrorEvent } from "./errors.js";
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

export interface RelayOptions {
  /** "decode" for the PD path, "engine" for aggregated mode: the error code's prefix. */
  leg: "decode" | "engine";
  clientSignal: AbortSignal;
  now: () => number;
  onEnd(end: RelayEnd): void;
}

const encoder = new TextEncoder();

export function sseRelay(engine: LegStream<Uint8Array>, o: RelayOptions): ReadableStream<Uint8Array> {
  const stats: RelayStats = { outputPieces: 0 };
  let held: Uint8Array | undefined; // an incomplete event's first bytes
  let sawDone = false;
  let ended = false;
  const end = (e: Omit<RelayEnd, "stats">) => {
    if (ended) return;
    ended = true;
    o.onEnd({ ...e, stats });
  };
  const streamError = (status: number, message: string) => {
    const code = `${o.leg}_stream_error`;
    return new GatewayError(code, status, message);
  };
  const label = o.leg === "decode" ? "Decode" : "Engine";

  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, prefix: string, err: GatewayError) => {
    controller.enqueue(encoder.encode(prefix + sseErrorEvent(err)));
    controller.close();
    engine.cancel();
    end({ outcome: "failed", status: err.status, errorCode: err.code });
  };

  const sawChunk = () => {
    const t = o.now();
    stats.firstEventAt ??= t;
    stats.lastEventAt = t;
  };

  /** The slow path: decode and classify each event. Returns the error (and the text before
   *  it) when one is in-band. */
  const parseEvents = (events: Uint8Array): { before: string; error: GatewayError } | undefined => {
    const text = new TextDecoder().decode(events);
    let before = "";
    for (const event of splitSseEvents(text).events) {
      const kind = classifySseEvent(event);
      if (kind.kind === "error") return { before, error: streamError(kind.status, kind.message) };
      if (kind.kind === "done") sawDone = true;
      else if (kind.kind === "chunk") {
        sawChunk();
        stats.outputPieces += outputPieces(kind.json);
        const u = usageOf(kind.json);
        if (u) stats.usage = u;
      }
      before += event;
    }
    return undefined;
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let r: IteratorResult<Uint8Array>;
        try {
          r = await engine.next();
        } catch (err) {
          if (ended) return;
          if (o.clientSignal.aborted) {
            controller.close();
            end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
            return;
          }
          return fail(controller, "", err instanceof GatewayError ? err : streamError(502, `${label} stream error: ${errorText(err)}`));
        }
        if (ended) return;
        if (r.done) {
          // An incomplete last event is dropped: it is a fragment no client could parse.
          if (!sawDone) return fail(controller, "", streamError(502, `${label} stream ended before [DONE]`));
          if (held) controller.enqueue(held);
          held = undefined;
          controller.close();
          end({ outcome: "completed", status: 200 });
          return;
        }
        let buf = r.value;
        if (held) {
          buf = concatBytes([held, buf], held.byteLength + buf.byteLength);
          held = undefined;
        }
        const cut = completeEventsEnd(buf);
        if (cut < buf.byteLength) held = buf.slice(cut);
        if (cut === 0) continue;
        const events = cut === buf.byteLength ? buf : buf.subarray(0, cut);
        const scan = scanEvents(events);
        if (scan.parse) {
          const bad = parseEvents(events);
          if (bad) return fail(controller, bad.before, bad.error);
        } else if (hasDataField(events)) {
          sawChunk();
          stats.outputPieces += scan.pieces;
        }
        controller.enqueue(events);
        return;
      }
    },
    cancel() {
      engine.cancel();
      end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    },
  });
}
