// Watches a Generate response stream for TTFT, TPOT and token counts, and reports one
// stream_complete event when it ends cleanly. Pure bookkeeping around the frames.
import type { GenerateResponse } from "../../gen/vllm_engine_pb.js";
import type { StreamCompleteEvent } from "../../metrics/events.js";
import { tpotMs } from "../../metrics/tpot.js";

export class StreamTiming {
  private firstTokenAt: number | undefined;
  private outputTokens = 0;
  private inputTokens: number | undefined;

  constructor(
    private readonly started: number,
    /** Sequences decoded side by side (n): TPOT is per token of one of them. */
    private readonly sequences: number = 1,
    private readonly now: () => number = Date.now,
  ) {}

  /** Chunks still matter (for TTFT and the prompt size) only until the first token. */
  get awaitingFirstToken(): boolean {
    return this.firstTokenAt === undefined;
  }

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
      const tpot = tpotMs(this.firstTokenAt, this.started + generationMs, this.outputTokens, this.sequences);
      if (tpot !== undefined) ev.tpotMs = tpot;
    }
    return ev;
  }
}
