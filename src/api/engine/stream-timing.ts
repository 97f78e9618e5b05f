// Watches a Generate response stream for TTFT, TPOT and token counts, and reports one
// stream_complete event when it ends cleanly. Pure bookkeeping around the frames; the token
// count is the one usage accumulator's (core/usage.ts): a streamed request's chunks carry
// deltas and its completes only the last one again.
import type { GenerateResponse } from "../../gen/vllm_engine_pb.js";
import { UsageAccumulator, type UsageFrame } from "../../core/usage.js";
import type { StreamCompleteEvent } from "../../metrics/events.js";
import { tpotMs } from "../../metrics/tpot.js";

export interface StreamTimingOptions {
  /** Sequences decoded side by side (n): TPOT is per token of one of them. */
  sequences?: number;
  /** The request asked for a stream (DELTA frames); default true. */
  streamed?: boolean;
  now?: () => number;
}

export class StreamTiming {
  private firstTokenAt: number | undefined;
  private inputTokens: number | undefined;
  private readonly tokens: UsageAccumulator;
  private readonly sequences: number;
  private readonly now: () => number;

  constructor(
    private readonly started: number,
    o: StreamTimingOptions = {},
  ) {
    this.sequences = o.sequences ?? 1;
    this.now = o.now ?? Date.now;
    this.tokens = new UsageAccumulator(o.streamed ?? true);
  }

  /** Chunks still matter for TTFT and the prompt size only until the first token; after it
   *  the raw relay reads just their token counts (observeUsage). */
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
      this.inputTokens ??= r.value.promptTokens;
    }
    this.tokens.addFrame(frame);
  }

  /** A frame's usage only (a chunk the raw relay counted without decoding it). */
  observeUsage(frame: UsageFrame): void {
    this.tokens.add(frame);
  }

  /** The event for a stream that ended cleanly; TPOT only with more than one output token. */
  event(base: Pick<StreamCompleteEvent, "model" | "surface" | "endpoint">): StreamCompleteEvent {
    const generationMs = this.now() - this.started;
    const outputTokens = this.tokens.usage().completionTokens;
    const ev: StreamCompleteEvent = { type: "stream_complete", ...base, generationMs, outputTokens };
    if (this.inputTokens !== undefined) ev.inputTokens = this.inputTokens;
    if (this.firstTokenAt !== undefined) {
      ev.ttftMs = this.firstTokenAt - this.started;
      const tpot = tpotMs(this.firstTokenAt, this.started + generationMs, outputTokens, this.sequences);
      if (tpot !== undefined) ev.tpotMs = tpot;
    }
    return ev;
  }
}
