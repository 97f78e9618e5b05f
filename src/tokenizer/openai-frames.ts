// GenerateResponse frames -> OpenAI chat.completion / text_completion objects and SSE chunks.
// Text comes from the gateway's detokenizer (one sequence per choice index). In streaming mode
// the text is built from `chunk` frames only: a `complete` frame's output_ids repeat tokens
// already streamed (the servicer's DELTA mode); in non-streaming mode the `complete` frame
// carries them all. A stop string the gateway matches finishes that choice with "stop" at once,
// and `allFinished` tells the pipeline it may Abort the engine request. Usage is the one
// accumulator's (core/usage.ts): streamed, the chunks' deltas; not, the completes' counts; a
// choice the gateway stopped counts the tokens up to the one that completed its stop string.
import type { GenerateResponse, InputLogProbs } from "../gen/vllm_engine_pb.js";
import { UsageAccumulator } from "../core/usage.js";
import { Detokenizer, type Decoder, type DetokenizeStep } from "./detokenizer.js";
import { ChoiceLogprobs, promptLogprobsOf } from "./logprobs.js";
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
  logprobs: ChoiceLogprobs;
  sentRole: boolean;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export class OpenAiResponseBuilder {
  private readonly detok: Detokenizer;
  private readonly choices: Choice[];
  private readonly tokens: UsageAccumulator;
  /** The engine's prompt logprobs, from the first frame that carries them. */
  private promptLogprobs: InputLogProbs | undefined;

  constructor(
    private readonly meta: ResponseMeta,
    private readonly plan: Pick<SamplingPlan, "n" | "logprobs" | "stream" | "includeUsage" | "detokenizer"> &
      Partial<Pick<SamplingPlan, "promptLogprobs" | "tokensAsIds" | "continuousUsage">>,
    private readonly decoder: Decoder,
  ) {
    this.detok = new Detokenizer(decoder, plan.detokenizer);
    const lp = { top: plan.logprobs ?? 0, tokensAsIds: plan.tokensAsIds ?? false };
    this.choices = Array.from({ length: plan.n }, () => ({ text: "", finishReason: null, logprobs: new ChoiceLogprobs(decoder, lp), sentRole: false }));
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
    this.promptLogprobs ??= v.inputLogprobs;
    if (choice.finishReason !== null) return [];
    const lines: string[] = [];
    if (r.case === "chunk") {
      if (this.plan.logprobs !== undefined) choice.logprobs.add(r.value.tokenIds, r.value.outputLogprobs);
      const step = this.detok.push(v.index, r.value.tokenIds);
      lines.push(...this.apply(v.index, step));
      return this.plan.stream ? lines : [];
    }
    const c = r.value;
    if (!this.plan.stream) {
      if (this.plan.logprobs !== undefined) choice.logprobs.add(c.outputIds, c.outputLogprobs);
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
    const prompt = this.promptLogprobsObject();
    return {
      ...this.envelope(false),
      choices: this.choices.map((c, index) =>
        this.meta.api === "chat"
          ? { index, message: { role: "assistant", content: c.text }, logprobs: this.logprobsObject(c), finish_reason: c.finishReason, stop_reason: c.matchedStop ?? null }
          : { index, text: c.text, logprobs: this.logprobsObject(c), finish_reason: c.finishReason, stop_reason: c.matchedStop ?? null, ...(prompt !== undefined ? { prompt_logprobs: prompt } : {}) },
      ),
      usage: this.usage(),
      // vLLM puts a chat answer's prompt logprobs beside its choices, a completion's in each.
      ...(prompt !== undefined && this.meta.api === "chat" ? { prompt_logprobs: prompt } : {}),
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
      if (step.tokensAtStop !== undefined) {
        this.tokens.stopAt(index, step.tokensAtStop);
        choice.logprobs.cut(step.tokensAtStop);
      }
    }
    if (step.text !== "" || emitEmpty || step.matchedStop !== undefined) {
      out.push(this.sse(this.chunkObject(index, step.text, choice.finishReason, choice)));
    }
    return out;
  }

  /** The choice's logprobs not yet sent (all of them for a non-streamed answer), or null
   *  when the client asked for none. */
  private logprobsObject(choice: Choice): Record<string, unknown> | null {
    if (this.plan.logprobs === undefined) return null;
    return choice.logprobs.render(this.meta.api, choice.logprobs.takePending());
  }

  private promptLogprobsObject(): unknown {
    if (this.plan.promptLogprobs === undefined) return undefined;
    if (!this.promptLogprobs) return null;
    return promptLogprobsOf(this.promptLogprobs, this.plan.promptLogprobs, this.decoder, this.plan.tokensAsIds ?? false);
  }

  private envelope(chunk: boolean) {
    const object = this.meta.api === "chat" ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return { id: this.meta.id, object, created: this.meta.created, model: this.meta.model };
  }

  private chunkObject(index: number, text: string, finishReason: string | null, choice: Choice): Record<string, unknown> {
    let body: Record<string, unknown>;
    // Chunks are built (and thrown away) for a non-streamed answer too: its logprobs stay whole.
    const logprobs = this.plan.stream ? this.logprobsObject(choice) : null;
    if (this.meta.api === "chat") {
      // The first chunk of each choice announces the role, as OpenAI and vLLM do.
      const delta: Record<string, unknown> = choice.sentRole ? {} : { role: "assistant" };
      choice.sentRole = true;
      if (text !== "" || finishReason === null) delta.content = text;
      body = { index, delta, logprobs, finish_reason: finishReason };
    } else {
      body = { index, text, logprobs, finish_reason: finishReason };
    }
    if (finishReason !== null) body.stop_reason = choice.matchedStop ?? null;
    const out: Record<string, unknown> = { ...this.envelope(true), choices: [body] };
    // continuous_usage_stats: the counts so far on every chunk, as vLLM sends them.
    if (this.plan.includeUsage) out.usage = this.plan.continuousUsage ? this.usage() : null;
    return out;
  }

  private sse(obj: unknown): string {
    return `data: ${JSON.stringify(obj)}\n\n`;
  }
}
