// What vLLM's chat serving (chat_completion/serving.py) makes of a sample's text: with a
// reasoning parser, `reasoning` apart from content; with tools, `tool_calls` and the
// finish_reason "tool_calls". Streamed and not, one shaper per choice.
import type { EngineConfig } from "./spec.js";
import type { ReplyFields } from "./openai-fields.js";
import { HermesStream, Qwen3Stream, hermesExtract, pyJsonDumps, qwen3Split, toolCallId, type DeltaToolCall } from "./vllm-parsers.js";

interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

const call = (name: string, args: string): ToolCall => ({ id: toolCallId(), type: "function", function: { name, arguments: args } });

/** A required tool choice's output, `[{name, parameters}, …]`, as calls (arguments re-dumped). */
function requiredCalls(text: string): ToolCall[] {
  try {
    const items = JSON.parse(text) as { name: string; parameters: unknown }[];
    return Array.isArray(items) ? items.map((t) => call(t.name, pyJsonDumps(t.parameters))) : [];
  } catch {
    return [];
  }
}

const autoTools = (cfg: EngineConfig, f: ReplyFields) => f.toolChoice === "auto" && cfg.enableAutoToolChoice && cfg.toolCallParser !== undefined && f.tools !== undefined;

/** The non-streamed message and finish_reason (chat_completion_full_generator). */
export function chatMessage(text: string, finish: string, cfg: EngineConfig, f: ReplyFields): { message: Record<string, unknown>; finish: string } {
  let reasoning: string | null = null;
  let content: string | null = text;
  if (cfg.reasoningParser) ({ reasoning, content } = qwen3Split(text, f.enableThinking));
  if (!f.includeReasoning) reasoning = null;
  let calls: ToolCall[] = [];
  let toolFinish = false;
  if (typeof f.toolChoice === "object") {
    calls = [call(f.toolChoice.name, content ?? "")];
    content = "";
  } else if (f.toolChoice === "required") {
    calls = requiredCalls(content ?? "");
    content = "";
    toolFinish = finish === "stop";
  } else if (autoTools(cfg, f)) {
    const x = hermesExtract(content ?? "");
    calls = x.calls.map((c) => call(c.name, c.arguments));
    if (calls.length > 0) content = x.content;
    toolFinish = calls.length > 0;
  }
  return {
    message: { role: "assistant", content, ...(cfg.reasoningParser ? { reasoning } : {}), ...(calls.length ? { tool_calls: calls } : {}) },
    finish: toolFinish ? "tool_calls" : finish,
  };
}

export type Delta = { content?: string; reasoning?: string; tool_calls?: DeltaToolCall[] };

/** One streamed choice (chat_completion_stream_generator): each text delta in, the delta
 *  message out, or undefined when there is nothing to send yet. */
export class ChatStreamShaper {
  private readonly reasoning: Qwen3Stream | undefined;
  private readonly hermes: HermesStream | undefined;
  private namedSent = false;
  private requiredText = "";
  toolsStreamed = false;

  constructor(
    private readonly cfg: EngineConfig,
    private readonly f: ReplyFields,
    private readonly choiceIndex: number,
  ) {
    this.reasoning = cfg.reasoningParser ? new Qwen3Stream(f.enableThinking) : undefined;
    this.hermes = autoTools(cfg, f) ? new HermesStream() : undefined;
  }

  /** True when no parser or tool choice shapes the stream: plain `{content}` deltas. */
  get plain(): boolean {
    return !this.reasoning && !this.hermes && (this.f.toolChoice === "none" || this.f.toolChoice === "auto");
  }

  feed(text: string, final: boolean): Delta | undefined {
    if (this.plain) return { content: text };
    const split = this.reasoning ? this.reasoning.feed(text) : { content: text };
    const out: Delta = {};
    if (split.reasoning && this.f.includeReasoning) out.reasoning = split.reasoning;
    const content = split.content ?? "";
    const tc = this.f.toolChoice;
    if (typeof tc === "object") {
      // serving_chat.py's named-tool branch: the output is the arguments; the first delta names
      // the function. Its index is the choice's index, as vLLM sets it.
      if (content !== "" || (!this.namedSent && final)) {
        out.tool_calls = [this.namedSent ? { index: this.choiceIndex, function: { arguments: content } } : { index: this.choiceIndex, id: toolCallId(), function: { name: tc.name, arguments: content } }];
        this.namedSent = true;
      }
    } else if (tc === "required") {
      // The sim sends a required choice's calls whole, when the array is complete.
      this.requiredText += content;
      if (final) {
        const calls = requiredCalls(this.requiredText);
        if (calls.length) out.tool_calls = calls.map((c, index) => ({ index, ...c }));
      }
    } else if (this.hermes) {
      Object.assign(out, this.hermes.feed(content));
    } else if (content !== "") {
      out.content = content;
    }
    if (out.tool_calls?.length) this.toolsStreamed = true;
    return Object.keys(out).length ? out : undefined;
  }

  /** The finish chunk's finish_reason: "tool_calls" once calls were streamed for auto or
   *  required and the sample stopped (a named choice stays "stop"). */
  finishReason(finish: string): string {
    return this.toolsStreamed && typeof this.f.toolChoice !== "object" && finish === "stop" ? "tool_calls" : finish;
  }
}
