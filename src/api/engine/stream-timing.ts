// Watches a Generate response stream for what the metrics writer (api/request-metrics.ts)
// needs: when the first and the last output token went to the client, and the token counts.
// Pure bookkeeping around the frames; the token count is the one usage accumulator's
// (core/usage.ts): a streamed request's chunks carry deltas and its completes only the last
// one again.
import type { GenerateResponse } from "../../gen/vllm_engine_pb.js";
import { UsageAccumulator, type UsageFrame } from "../../core/usage.js";
import type { OutputStats } from "../request-metrics.js";

export interface StreamTimingOptions {
  /** The request asked for a stream (DELTA frames); default true. */
  streamed?: boolean;
  now?: () => number;
}

export class StreamTiming {
  private firstTokenAt: number | undefined;
  private lastTokenAt: number | undefined;
  private inputTokens: number | undefined;
  private readonly tokens: UsageAccumulator;
  private readonly now: () => number;

  constructor(o: StreamTimingOptions = {}) {
    this.now = o.now ?? Date.now;
    this.tokens = new UsageAccumulator(o.streamed ?? true);
  }

  /** Chunks still matter for the prompt size only until the first token; after it the raw
   *  relay reads just their token counts (observeUsage). */
  get awaitingFirstToken(): boolean {
    return this.firstTokenAt === undefined;
  }

  observe(frame: GenerateResponse): void {
    const r = frame.response;
    if (r.case === "chunk") {
      if (r.value.tokenIds.length > 0) this.sawTokens();
      this.inputTokens ??= r.value.promptTokens;
    } else if (r.case === "complete") {
      if (r.value.outputIds.length > 0) this.sawTokens();
      this.inputTokens ??= r.value.promptTokens;
    }
    this.tokens.addFrame(frame);
  }

  /** A frame's usage only (a chunk the raw relay counted without decoding it). */
  observeUsage(frame: UsageFrame): void {
    if (frame.kind === "chunk" && frame.tokens > 0) this.sawTokens();
    this.tokens.add(frame);
  }

  /** What went out, for the metrics writer. */
  stats(): OutputStats {
    return { firstOutputAt: this.firstTokenAt, lastOutputAt: this.lastTokenAt, outputTokens: this.tokens.usage().completionTokens, inputTokens: this.inputTokens };
  }

  private sawTokens(): void {
    const t = this.now();
    this.firstTokenAt ??= t;
    this.lastTokenAt = t;
  }
}
