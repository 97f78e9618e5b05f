// GenerateResponse frames -> OpenAI chat.completion / text_completion objects and SSE chunks.
// Text comes from the gateway's detokenizer (one sequence per choice index). In streaming mode
// the text is built from `chunk` frames only: a `complete` frame's output_ids repeat tokens
// already streamed (the servicer's DELTA mode); in non-streaming mode the `complete` frame
// carries them all. A stop string the gateway matches finishes that choice with "stop" at once,
// and `allFinished` tells the pipeline it may Abort the engine request. Usage is the one
// accumulator's (core/usage.ts): streamed, the chunks' deltas; not, the completes' counts; a
// choice the gateway stopped counts the tokens up to the one that completed its stop string.
import type { GenerateResponse, OutputLogProbs } from "../gen/vllm_engine_pb.js";
import { UsageAccumulator } from "../core/usage.js";
import { Detokenizer, type Decoder, type DetokenizeStep } from "./detokenizer.js";
import type { SamplingPlan } from "./sampling.js";

export interface ResponseMeta {
  api: "chat" | "completions";
  id: string;
  created: number;
  model: string;
}

interface Choice {
  text: string;
  finishReason: string | null;
  matchedStop?: string;
  logprobs: TokenLogprob[];
  sentRole: boolean;
}

interface TokenLogprob {
  token: string;
  logprob: number;
  top: { token: string; logprob: number }[];
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

const utf8 = new TextEncoder();

export class OpenAiResponseBuilder {
  private readonly detok: Detokenizer;
  private readonly choices: Choice[];
  private readonly tokens: UsageAccumulator;

  constructor(
    private readonly meta: ResponseMeta,
    private readonly plan: Pick<SamplingPlan, "n" | "logprobs" | "stream" | "includeUsage" | "detokenizer">,
    private readonly decoder: Decoder,
  ) {
    this.detok = new Detokenizer(decoder, plan.detokenizer);
    this.choices = Array.from({ length: plan.n }, () => ({ text: "", finishReason: null, logprobs: [], sentRole: false }));
    this.tokens = new UsageAccumulator(plan.stream);
  }

  /** Every choice has a finish reason: nothing more is needed from the engine. */
  get allFinished(): boolean {
    return this.choices.every((c) => c.finishReason !== null);
  }

  /** Feeds one frame; in streaming mode returns the SSE lines to send now. */
  onFrame(frame: GenerateResponse): string[] {
    const r = frame.response;
    if (r.case === undefined) return [];
    const v = r.value;
    const choice = this.choices[v.index];
    if (!choice) return [];
    this.tokens.addFrame(frame);
    if (choice.finishReason !== null) return [];
    const lines: string[] = [];
    if (r.case === "chunk") {
      this.addLogprobs(choice, r.value.tokenIds, r.value.outputLogprobs);
      const step = this.detok.push(v.index, r.value.tokenIds);
      lines.push(...this.apply(v.index, step));
      return this.plan.stream ? lines : [];
    }
    const c = r.value;
    if (!this.plan.stream) {
      this.addLogprobs(choice, c.outputIds, c.outputLogprobs);
      this.apply(v.index, this.detok.push(v.index, c.outputIds));
    }
    if (choice.finishReason === null) {
      const tail = this.detok.finish(v.index);
      lines.push(...this.apply(v.index, tail, false));
      if (choice.finishReason === null) {
        choice.finishReason = c.finishReason === "" ? "stop" : c.finishReason;
        if (c.matchedStop.case === "matchedStopStr") choice.matchedStop = c.matchedStop.value;
        lines.push(this.sse(this.chunkObject(v.index, "", choice.finishReason, choice)));
      }
    }
    return this.plan.stream ? lines : [];
  }

  /** End of a stream: the usage chunk (stream_options.include_usage) and [DONE]. */
  finishStream(): string[] {
    const out: string[] = [];
    if (this.plan.includeUsage) out.push(this.sse({ ...this.envelope(true), choices: [], usage: this.usage() }));
    out.push("data: [DONE]\n\n");
    return out;
  }

  /** The non-streaming response object. */
  result(): Record<string, unknown> {
    return {
      ...this.envelope(false),
      choices: this.choices.map((c, index) =>
        this.meta.api === "chat"
          ? { index, message: { role: "assistant", content: c.text }, logprobs: this.logprobsObject(c.logprobs), finish_reason: c.finishReason, stop_reason: c.matchedStop ?? null }
          : { index, text: c.text, logprobs: this.logprobsObject(c.logprobs), finish_reason: c.finishReason, stop_reason: c.matchedStop ?? null },
      ),
      usage: this.usage(),
    };
  }

  usage(): Usage {
    const u = this.tokens.usage();
    return {
      prompt_tokens: u.promptTokens,
      completion_tokens: u.completionTokens,
      total_tokens: u.promptTokens + u.completionTokens,
      prompt_tokens_details: { cached_tokens: u.cachedTokens },
    };
  }

  private apply(index: number, step: DetokenizeStep, emitEmpty = false): string[] {
    const choice = this.choices[index]!;
    choice.text += step.text;
    const out: string[] = [];
    if (step.matchedStop !== undefined) {
      choice.finishReason = "stop";
      choice.matchedStop = step.matchedStop;
      if (step.tokensAtStop !== undefined) this.tokens.stopAt(index, step.tokensAtStop);
    }
    if (step.text !== "" || emitEmpty || step.matchedStop !== undefined) {
      out.push(this.sse(this.chunkObject(index, step.text, choice.finishReason, choice)));
    }
    return out;
  }

  private addLogprobs(choice: Choice, ids: readonly number[], lp: OutputLogProbs | undefined): void {
    if (this.plan.logprobs === undefined || !lp) return;
    ids.forEach((id, i) => {
      const top = lp.topLogprobs[i];
      choice.logprobs.push({
        token: this.decoder.decode([id], { skipSpecialTokens: false }),
        logprob: lp.tokenLogprobs[i] ?? 0,
        top: top ? top.tokenIds.map((t, j) => ({ token: this.decoder.decode([t], { skipSpecialTokens: false }), logprob: top.values[j] ?? 0 })) : [],
      });
    });
  }

  private logprobsObject(lps: TokenLogprob[]): unknown {
    if (this.plan.logprobs === undefined) return null;
    if (this.meta.api === "chat") {
      const entry = (t: { token: string; logprob: number }) => ({ token: t.token, logprob: t.logprob, bytes: [...utf8.encode(t.token)] });
      return { content: lps.map((l) => ({ ...entry(l), top_logprobs: l.top.slice(0, this.plan.logprobs).map(entry) })) };
    }
    return {
      tokens: lps.map((l) => l.token),
      token_logprobs: lps.map((l) => l.logprob),
      top_logprobs: lps.map((l) => Object.fromEntries(l.top.slice(0, this.plan.logprobs).map((t) => [t.token, t.logprob]))),
    };
  }

  private envelope(chunk: boolean) {
    const object = this.meta.api === "chat" ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return { id: this.meta.id, object, created: this.meta.created, model: this.meta.model };
  }

  private chunkObject(index: number, text: string, finishReason: string | null, choice: Choice): Record<string, unknown> {
    let body: Record<string, unknown>;
    if (this.meta.api === "chat") {
      // The first chunk of each choice announces the role, as OpenAI and vLLM do.
      const delta: Record<string, unknown> = choice.sentRole ? {} : { role: "assistant" };
      choice.sentRole = true;
      if (text !== "" || finishReason === null) delta.content = text;
      body = { index, delta, logprobs: null, finish_reason: finishReason };
    } else {
      body = { index, text, logprobs: null, finish_reason: finishReason };
    }
    if (finishReason !== null) body.stop_reason = choice.matchedStop ?? null;
    const out: Record<string, unknown> = { ...this.envelope(true), choices: [body] };
    if (this.plan.includeUsage) out.usage = null;
    return out;
  }

  private sse(obj: unknown): string {
    return `data: ${JSON.stringify(obj)}\n\n`;
  }
}
