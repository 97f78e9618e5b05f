// GenerateResponse frames -> OpenAI chat.completion / text_completion objects and SSE chunks.
// Text comes from the gateway's detokenizer (one sequence per choice index). In streaming mode
// the text is built from `chunk` frames only: a `complete` frame's output_ids repeat tokens
// already streamed (the servicer's DELTA mode); in non-streaming mode the `complete` frame
// carries them all. A stop string the gateway matches finishes that choice with "stop" at once,
// and `allFinished` tells the pipeline it may Abort the engine request. Usage is the one
// accumulator's (core/usage.ts): streamed, the chunks' deltas; not, the completes' counts; a
// choice the gateway stopped counts the tokens up to the one that completed its stop string.
// A chat reply with an output plan (parsers/output-plan.ts) goes through one OutputParser per
// choice: reasoning and tool calls come out in vLLM's fields, and no markup reaches content.
import type { GenerateResponse, InputLogProbs } from "../gen/vllm_engine_pb.js";
import { UsageAccumulator } from "../core/usage.js";
import { collectOutput, OutputParser } from "../parsers/output-parser.js";
import { finishReasonOf, type OutputPlan } from "../parsers/output-plan.js";
import { emptyDelta, type OutputDelta } from "../parsers/types.js";
import { Detokenizer, type Decoder, type DetokenizeStep } from "./detokenizer.js";
import { keepingSpecialTokens, type SpecialTokenSource } from "./keep-special.js";
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
  /** The reply's parser, with an output plan. */
  parser?: OutputParser;
  /** Everything the parser settled (the non-streamed message is built from it). */
  parsed: OutputDelta[];
  calls: number;
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
    private readonly decoder: Decoder & Partial<SpecialTokenSource>,
    /** How a chat reply is read (tools, reasoning); absent: plain text. */
    private readonly output?: OutputPlan,
  ) {
    const keep = output?.keepSpecialTokens ?? [];
    const text = keep.length > 0 && decoder.tokenToId && decoder.specialTokenIds ? keepingSpecialTokens(decoder as SpecialTokenSource, keep) : decoder;
    this.detok = new Detokenizer(text, plan.detokenizer);
    const lp = { top: plan.logprobs ?? 0, tokensAsIds: plan.tokensAsIds ?? false };
    const parserOptions = output?.parser;
    this.choices = Array.from({ length: plan.n }, () => ({
      text: "",
      finishReason: null,
      logprobs: new ChoiceLogprobs(decoder, lp),
      sentRole: false,
      ...(parserOptions ? { parser: new OutputParser(parserOptions) } : {}),
      parsed: [],
      calls: 0,
    }));
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
      lines.push(...this.apply(v.index, tail, true));
      if (choice.finishReason === null) {
        choice.finishReason = this.finishReason(choice, c.finishReason === "" ? "stop" : c.finishReason);
        if (c.matchedStop.case === "matchedStopStr") choice.matchedStop = c.matchedStop.value;
        lines.push(...this.chunks(v.index, emptyDelta(), choice.finishReason, choice));
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
          ? { index, message: this.message(c), logprobs: this.logprobsObject(c), finish_reason: c.finishReason, stop_reason: c.matchedStop ?? null }
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

  /** Takes a detokenizer step; `final`: the reply ends here (the parser settles what it holds). */
  private apply(index: number, step: DetokenizeStep, final = false): string[] {
    const choice = this.choices[index]!;
    choice.text += step.text;
    const stopped = step.matchedStop !== undefined;
    const d = this.parse(choice, step.text, final || stopped);
    if (stopped) {
      choice.finishReason = this.finishReason(choice, "stop");
      choice.matchedStop = step.matchedStop;
      if (step.tokensAtStop !== undefined) {
        this.tokens.stopAt(index, step.tokensAtStop);
        choice.logprobs.cut(step.tokensAtStop);
      }
    }
    if (d.content !== "" || d.reasoning !== "" || d.toolCalls.length > 0 || stopped) return this.chunks(index, d, choice.finishReason, choice);
    return [];
  }

  /** The text's settled output: through the choice's parser, or all of it as content. */
  private parse(choice: Choice, text: string, final: boolean): OutputDelta {
    if (!choice.parser) return { ...emptyDelta(), content: text };
    const d = choice.parser.push(text);
    if (final) {
      const rest = choice.parser.flush();
      d.content += rest.content;
      d.reasoning += rest.reasoning;
      d.toolCalls.push(...rest.toolCalls);
    }
    if (this.output?.includeReasoning === false) d.reasoning = "";
    for (const c of d.toolCalls) if (c.id !== undefined) choice.calls++;
    choice.parsed.push(d);
    return d;
  }

  private finishReason(choice: Choice, engineReason: string): string {
    return this.output ? finishReasonOf(engineReason, this.output.toolMode, choice.calls) : engineReason;
  }

  /** The non-streamed chat message: vLLM's fields (`reasoning`, its only name for it since
   *  vLLM PR 33402 removed `reasoning_content`). */
  private message(choice: Choice): Record<string, unknown> {
    if (!choice.parser) return { role: "assistant", content: choice.text };
    const out = collectOutput(choice.parsed);
    const msg: Record<string, unknown> = { role: "assistant", content: out.content };
    if (this.output?.parser?.reasoning && this.output.includeReasoning) {
      msg.reasoning = out.reasoning;
    }
    if (out.toolCalls.length > 0) msg.tool_calls = out.toolCalls;
    return msg;
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

  /** A settled delta's SSE chunks (none for a non-streamed answer): content and reasoning in
   *  one, then one per tool-call delta, as vLLM streams them; finish_reason on the last. */
  private chunks(index: number, d: OutputDelta, finishReason: string | null, choice: Choice): string[] {
    if (!this.plan.stream) return [];
    const deltas: Record<string, unknown>[] = [];
    if (d.content !== "" || d.reasoning !== "" || d.toolCalls.length === 0) {
      const delta: Record<string, unknown> = {};
      if (d.content !== "" || (finishReason === null && d.reasoning === "")) delta.content = d.content;
      if (d.reasoning !== "") {
        delta.reasoning = d.reasoning;
      }
      deltas.push(delta);
    }
    for (const call of d.toolCalls) deltas.push({ tool_calls: [call] });
    return deltas.map((delta, i) => this.sse(this.chunkObject(index, delta, i === deltas.length - 1 ? finishReason : null, choice)));
  }

  private chunkObject(index: number, delta: Record<string, unknown>, finishReason: string | null, choice: Choice): Record<string, unknown> {
    let body: Record<string, unknown>;
    const logprobs = this.logprobsObject(choice);
    if (this.meta.api === "chat") {
      // The first chunk of each choice announces the role, as OpenAI and vLLM do.
      const withRole = choice.sentRole ? delta : { role: "assistant", ...delta };
      choice.sentRole = true;
      body = { index, delta: withRole, logprobs, finish_reason: finishReason };
    } else {
      body = { index, text: typeof delta.content === "string" ? delta.content : "", logprobs, finish_reason: finishReason };
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
