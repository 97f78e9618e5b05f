// Relays an engine's SSE stream to the client event by event, as each event completes (no
// buffering beyond the event in flight), watching it on the way for TTFT and usage. Any way
// the stream can fail mid-way (an in-band error event, a broken connection, an end without
// [DONE]) becomes one final gateway error event, then the stream closes.
import { errorText, GatewayError } from "../../core/errors.js";
import type { LegStream } from "../../pd/leg.js";
import { sseErrorEvent } from "./errors.js";
import { classifySseEvent, outputPieces, splitSseEvents, usageOf, type Usage } from "./sse.js";

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

export function sseRelay(engine: LegStream<Uint8Array>, o: RelayOptions): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const stats: RelayStats = { outputPieces: 0 };
  const code = `${o.leg}_stream_error`;
  const label = o.leg === "decode" ? "Decode" : "Engine";
  let buffer = "";
  let sawDone = false;
  let ended = false;
  const end = (e: Omit<RelayEnd, "stats">) => {
    if (ended) return;
    ended = true;
    o.onEnd({ ...e, stats });
  };

  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, prefix: string, err: GatewayError) => {
    controller.enqueue(encoder.encode(prefix + sseErrorEvent(err)));
    controller.close();
    engine.cancel();
    end({ outcome: "failed", status: err.status, errorCode: err.code });
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
          return fail(controller, "", err instanceof GatewayError ? err : new GatewayError(code, 502, `${label} stream error: ${errorText(err)}`));
        }
        if (ended) return;
        if (r.done) {
          const tail = buffer + decoder.decode();
          buffer = "";
          // An incomplete last event is dropped: it is a fragment no client could parse.
          if (!sawDone) return fail(controller, "", new GatewayError(code, 502, `${label} stream ended before [DONE]`));
          if (tail !== "") controller.enqueue(encoder.encode(tail));
          controller.close();
          end({ outcome: "completed", status: 200 });
          return;
        }
        buffer += decoder.decode(r.value, { stream: true });
        const split = splitSseEvents(buffer);
        buffer = split.rest;
        if (split.events.length === 0) continue;
        let out = "";
        for (const event of split.events) {
          const kind = classifySseEvent(event);
          if (kind.kind === "error") return fail(controller, out, new GatewayError(code, kind.status, kind.message));
          if (kind.kind === "done") sawDone = true;
          else if (kind.kind === "chunk") {
            const t = o.now();
            stats.firstEventAt ??= t;
            stats.lastEventAt = t;
            stats.outputPieces += outputPieces(kind.json);
            const u = usageOf(kind.json);
            if (u) stats.usage = u;
          }
          out += event;
        }
        controller.enqueue(encoder.encode(out));
        return;
      }
    },
    cancel() {
      engine.cancel();
      end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    },
  });
}
