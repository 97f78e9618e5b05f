// Token usage of one Generate call as the VllmEngine servicer reports it, counted once for
// every path that counts (the Generate relays' metrics, OpenAI over VllmEngine engines).
//
// The upstream servicer (smg grpc_servicer/smg_grpc_servicer/vllm/servicer.py,
// `_chunk_response` / `_complete_response`) runs vLLM with DELTA output when streaming:
// a chunk's completion_tokens is the number of tokens in THAT chunk ("client will
// accumulate"), and the streamed `complete` repeats only the last delta. Non-streamed
// (FINAL_ONLY), the `complete` carries every token and their count. So: streamed, sum the
// chunks per index and ignore the complete's count (the upstream gateway's
// CompletionTokenTracker does the same); non-streamed, take the complete's count. Taking the
// largest count seen instead reports 1 for a 14-token stream.
//
// Where the gateway itself ends a sequence at a stop string (it detokenizes for OpenAI
// clients), the count is the tokens up to and including the one that completed the stop,
// as vLLM counts them, whatever the engine generated after it: the same request then counts
// the same streamed and not. Pure.

/** One frame, as far as usage goes (plain numbers: core knows no wire types). */
export type UsageFrame =
  | { kind: "chunk"; index: number; tokens: number; promptTokens: number; cachedTokens: number }
  | { kind: "complete"; index: number; completionTokens: number; promptTokens: number; cachedTokens: number };

/** A GenerateResponse, structurally (src/gen's type fits it; core imports no generated code). */
export interface UsageWireFrame {
  response:
    | { case: "chunk"; value: { index: number; tokenIds: readonly number[]; promptTokens: number; cachedTokens: number } }
    | { case: "complete"; value: { index: number; completionTokens: number; outputIds: readonly number[]; promptTokens: number; cachedTokens: number } }
    | { case: undefined; value?: undefined };
}

/** The usage a GenerateResponse reports; undefined for an empty one. A chunk counts the tokens
 *  it carries (the servicer's completion_tokens is their count). */
export function usageFrameOf(frame: UsageWireFrame): UsageFrame | undefined {
  const r = frame.response;
  if (r.case === "chunk") {
    const v = r.value;
    return { kind: "chunk", index: v.index, tokens: v.tokenIds.length, promptTokens: v.promptTokens, cachedTokens: v.cachedTokens };
  }
  if (r.case === "complete") {
    const v = r.value;
    return { kind: "complete", index: v.index, completionTokens: v.completionTokens || v.outputIds.length, promptTokens: v.promptTokens, cachedTokens: v.cachedTokens };
  }
  return undefined;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export class UsageAccumulator {
  private readonly counts = new Map<number, number>();
  /** Indexes whose count is final (a stop the gateway matched): later frames do not change it. */
  private readonly settled = new Set<number>();
  private prompt = 0;
  private cached = 0;

  constructor(
    /** The request asked for a stream (DELTA frames); false: FINAL_ONLY. */
    private readonly streamed: boolean,
  ) {}

  add(f: UsageFrame): void {
    // Whole-request values, the same on every message.
    this.prompt = Math.max(this.prompt, f.promptTokens);
    this.cached = Math.max(this.cached, f.cachedTokens);
    if (this.settled.has(f.index)) return;
    if (f.kind === "chunk") {
      if (this.streamed) this.counts.set(f.index, (this.counts.get(f.index) ?? 0) + f.tokens);
    } else if (!this.streamed) {
      this.counts.set(f.index, f.completionTokens);
    }
  }

  /** A GenerateResponse (usageFrameOf). */
  addFrame(frame: UsageWireFrame): void {
    const f = usageFrameOf(frame);
    if (f) this.add(f);
  }

  /** The gateway ended `index` at a stop string that its `tokens`-th output token completed. */
  stopAt(index: number, tokens: number): void {
    if (this.settled.has(index)) return;
    this.settled.add(index);
    this.counts.set(index, tokens);
  }

  /** Output tokens of one index so far. */
  completionTokensOf(index: number): number {
    return this.counts.get(index) ?? 0;
  }

  usage(): TokenUsage {
    let completion = 0;
    for (const c of this.counts.values()) completion += c;
    return { promptTokens: this.prompt, completionTokens: completion, cachedTokens: this.cached };
  }
}
