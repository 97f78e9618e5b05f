// Watches a Generate response stream for TTFT, TPOT and token counts, and reports one
// stream_complete event when it ends cleanly. Pure bookkeeping around the frames.
import type { GenerateResponse } from "../../gen/vllm_engine_pb.js";
import type { StreamCompleteEvent } from "../../metrics/events.js";

export class StreamTiming {
  private firstTokenAt: number | undefined;
  private outputTokens = 0;
  private inputTokens: number | undefined;

  constructor(private readonly started: number, private readonly now: () => number = Date.now) {}

  observe(frame: GenerateResponse): void {
    const r = frame.response;
    if (r.case === "chunk") {
      if (this.firstTokenAt === undefined && r.value.tokenIds.length > 0) this.firstTokenAt = this.now();
      this.inputTokens ??= r.value.promptTokens;
    } else if (r.case === "complete") {
      if (this.firstTokenAt === undefined && r.value.outputIds.length > 0) this.firstTokenAt = this.now();
      this.outputTokens += r.value.completionTokens || r.value.outputIds.length;
      this.inputTokens ??= r.value.promptTokens;
    }
  }

  /** The event for a stream that ended cleanly; TPOT only with more than one output token. */
  event(base: Pick<StreamCompleteEvent, "model" | "surface" | "endpoint">): StreamCompleteEvent {
    const generationMs = this.now() - this.started;
    const ev: StreamCompleteEvent = { type: "stream_complete", ...base, generationMs, outputTokens: this.outputTokens };
    if (this.inputTokens !== undefined) ev.inputTokens = this.inputTokens;
    if (this.firstTokenAt !== undefined) {
      ev.ttftMs = this.firstTokenAt - this.started;
      if (this.outputTokens > 1) ev.tpotMs = (generationMs - ev.ttftMs) / (this.outputTokens - 1);
    }
    return ev;
  }
}
