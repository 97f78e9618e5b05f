// The parser one reply's text goes through: reasoning first (when the model has a reasoning
// format), then tool calls in the normal text (when the request has tools and a format
// applies). `push` takes each decoded text delta, `flush` settles what is held at the end;
// `parseOutput` is the same run over a whole reply, so streamed and non-streamed answers agree.
import { ArrayCallsReader, type ConstrainedOutput } from "./constrained.js";
import { ContentEmitter } from "./content-emitter.js";
import { ReasoningSplitter, type ReasoningFormat } from "./reasoning.js";
import type { ToolFormat, ToolScanner } from "./tool-format.js";
import { emptyDelta, type OutputDelta, type ParsedOutput, type ToolCall, type ToolSpec } from "./types.js";

export interface OutputParserOptions {
  /** The tool-call format; none: no call parsing (no tools, or tool_choice "none"). */
  toolFormat?: ToolFormat;
  /** The request's tools (formats that convert values by declared type read them). */
  tools?: readonly ToolSpec[];
  reasoning?: ReasoningFormat;
  /** The request's thinking switch (chat_template_kwargs.enable_thinking), when it set one. */
  thinking?: boolean;
  /** false: at most one call (the first). Default true. */
  parallelToolCalls?: boolean;
  /** Output the engine produced under a tool constraint (tool-choice.ts): read as that
   *  instead of by the tool format. */
  constrained?: ConstrainedOutput;
  /** Ids for the calls (default: "chatcmpl-tool-" and 32 random hex digits, as vLLM). */
  newCallId?: () => string;
}

export function randomCallId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return "chatcmpl-tool-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export class OutputParser {
  private readonly splitter: ReasoningSplitter | undefined;
  private readonly scanner: ToolScanner | undefined;
  private readonly emitter: ContentEmitter;
  private readonly constrained: ConstrainedOutput | undefined;
  private readonly array: ArrayCallsReader | undefined;
  private namedBegun = false;
  private pending = "";

  constructor(options: OutputParserOptions = {}) {
    this.splitter = options.reasoning ? new ReasoningSplitter(options.reasoning, options.thinking) : undefined;
    this.scanner = options.toolFormat?.scanner(options.tools ?? []);
    this.emitter = new ContentEmitter(options.newCallId ?? randomCallId, options.parallelToolCalls === false ? 1 : Infinity);
    this.constrained = options.constrained;
    this.array = options.constrained?.kind === "array" ? new ArrayCallsReader() : undefined;
  }

  /** One decoded text delta in; what it settles out. */
  push(text: string): OutputDelta {
    return this.run(text, false);
  }

  /** The end of the reply: everything still held is settled (a partial marker that never
   *  completed is content after all). */
  flush(): OutputDelta {
    return this.run("", true);
  }

  private run(text: string, final: boolean): OutputDelta {
    const delta = emptyDelta();
    const pieces = this.splitter ? this.splitter.push(text, final) : [{ kind: "normal" as const, text }];
    for (const p of pieces) {
      if (p.kind === "reasoning") delta.reasoning += p.text;
      else this.pending += p.text;
    }
    this.scan(delta, final);
    return delta;
  }

  private scan(delta: OutputDelta, final: boolean): void {
    if (this.constrained) return this.readConstrained(delta, final);
    if (!this.scanner) {
      this.emitter.content(delta, this.pending);
      this.pending = "";
      return;
    }
    while (this.pending) {
      const step = this.scanner.step(this.pending, final);
      if (step.kind === "wait") return;
      const consumed = this.pending.slice(0, step.length);
      this.pending = this.pending.slice(step.length);
      if (step.kind === "text") this.emitter.content(delta, consumed);
      else if (step.kind === "calls") for (const call of step.calls) this.emitter.call(delta, call);
    }
  }

  private readConstrained(delta: OutputDelta, final: boolean): void {
    const text = this.pending;
    this.pending = "";
    if (this.array) {
      for (const call of this.array.push(text, final)) this.emitter.call(delta, call);
      if (final && this.array.calls === 0) this.emitter.content(delta, this.array.raw);
      return;
    }
    if ((text || final) && !this.namedBegun && this.constrained?.kind === "named") {
      this.namedBegun = this.emitter.beginCall(delta, this.constrained.name);
    }
    this.emitter.args(delta, text);
  }
}

/** Folds deltas into the non-streamed shape (content null when empty, as OpenAI). */
export function collectOutput(deltas: readonly OutputDelta[]): ParsedOutput {
  let content = "";
  let reasoning = "";
  const toolCalls: ToolCall[] = [];
  for (const d of deltas) {
    content += d.content;
    reasoning += d.reasoning;
    for (const c of d.toolCalls) {
      if (c.id !== undefined) toolCalls.push({ id: c.id, type: "function", function: { name: c.function.name ?? "", arguments: "" } });
      toolCalls[c.index]!.function.arguments += c.function.arguments;
    }
  }
  return { content: content === "" ? null : content, reasoning: reasoning === "" ? null : reasoning, toolCalls };
}

/** A whole reply (non-streamed answers). */
export function parseOutput(text: string, options: OutputParserOptions = {}): ParsedOutput {
  const parser = new OutputParser(options);
  return collectOutput([parser.push(text), parser.flush()]);
}
