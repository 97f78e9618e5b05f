// A VllmEngine leg's GenerateResponse frames turned into the OpenAI answer, as SSE events while
// they come or as one JSON object. The text is the gateway's detokenizer's (OpenAiResponseBuilder);
// when it has matched a stop string on every choice before the engine finished, the leg is
// cancelled, which aborts the engine request (no tokens generated for nobody).
import { clientCancelledError, errorText, GatewayError } from "../../core/errors.js";
import type { GenerateResponse } from "../../gen/vllm_engine_pb.js";
import type { LegStream } from "../../pd/leg.js";
import type { OpenAiResponseBuilder, Usage } from "../../tokenizer/openai-frames.js";
import { sseErrorEvent } from "./errors.js";

export interface EngineStreamEnd {
  outcome: "completed" | "failed" | "cancelled";
  status: number;
  errorCode?: string;
  firstTextAt?: number;
  lastTextAt?: number;
  usage: Usage;
}

/** Feeds frames to the builder; says when to stop reading. */
class FrameReader {
  private completes = 0;
  private cancelled = false;
  constructor(
    private readonly stream: LegStream<GenerateResponse>,
    private readonly builder: OpenAiResponseBuilder,
    private readonly n: number,
  ) {}

  /** The next frame's SSE lines, or undefined at the end (engine done, or every choice ended
   *  on the gateway's stop string, after which the leg was cancelled). */
  async next(): Promise<string[] | undefined> {
    if (this.cancelled) return undefined;
    const r = await this.stream.next();
    // Read to the end otherwise: that is what releases the leg (load, tracking).
    if (r.done) return undefined;
    if (r.value.response.case === "complete") this.completes++;
    const lines = this.builder.onFrame(r.value);
    // Finished here with completes still owed: our stop string, not the engine's end.
    if (this.builder.allFinished && this.completes < this.n) {
      this.cancelled = true;
      this.stream.cancel();
    }
    return lines;
  }
}

export function engineSseBody(
  stream: LegStream<GenerateResponse>,
  builder: OpenAiResponseBuilder,
  o: { n: number; leg: "decode" | "engine"; clientSignal: AbortSignal; now: () => number; onEnd(end: EngineStreamEnd): void },
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const reader = new FrameReader(stream, builder, o.n);
  const times: { firstTextAt?: number; lastTextAt?: number } = {};
  let ended = false;
  const end = (e: Omit<EngineStreamEnd, "usage">) => {
    if (ended) return;
    ended = true;
    o.onEnd({ ...times, ...e, usage: builder.usage() });
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let lines: string[] | undefined;
        try {
          lines = await reader.next();
        } catch (err) {
          if (ended) return;
          stream.cancel();
          if (o.clientSignal.aborted) {
            controller.close();
            return end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
          }
          const e = err instanceof GatewayError ? err : new GatewayError(`${o.leg}_stream_error`, 502, `${o.leg === "decode" ? "Decode" : "Engine"} stream error: ${errorText(err)}`);
          controller.enqueue(encoder.encode(sseErrorEvent(e)));
          controller.close();
          return end({ outcome: "failed", status: e.status, errorCode: e.code });
        }
        if (ended) return;
        if (lines === undefined) {
          controller.enqueue(encoder.encode(builder.finishStream().join("")));
          controller.close();
          return end({ outcome: "completed", status: 200 });
        }
        if (lines.length === 0) continue;
        const t = o.now();
        times.firstTextAt ??= t;
        times.lastTextAt = t;
        controller.enqueue(encoder.encode(lines.join("")));
        return;
      }
    },
    cancel() {
      stream.cancel();
      end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    },
  });
}

/** The whole non-streamed answer. */
export async function engineJsonResult(stream: LegStream<GenerateResponse>, builder: OpenAiResponseBuilder, n: number, clientSignal: AbortSignal): Promise<Record<string, unknown>> {
  const reader = new FrameReader(stream, builder, n);
  try {
    while ((await reader.next()) !== undefined);
  } catch (err) {
    stream.cancel();
    if (clientSignal.aborted) throw clientCancelledError();
    throw err;
  }
  return builder.result();
}
