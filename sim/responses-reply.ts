// What vLLM's Responses serving (vllm/entrypoints/openai/responses/serving.py and
// simple_streaming_events.py, the path without Harmony) makes of a reply its reasoning and tool
// parsers split: a reasoning item, a message item, one function_call item per call, in that
// order; streamed as those items' events. The parsers are the chat path's (chat-reply.ts), as
// in vLLM, where both paths call the same parser classes.
import { randomUUID } from "node:crypto";
import type { Delta } from "./chat-reply.js";
import type { DeltaToolCall } from "./vllm-parsers.js";

const hex = () => randomUUID().replace(/-/g, "");
export const outputText = (text: string, logprobs: unknown[] | null) => ({ annotations: [], text, type: "output_text", logprobs });

/** _make_response_output_items: the final response's output. A message item is there when
 *  there is text, or when nothing else is (an empty completion is one message without parts). */
export function responseOutput(message: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  const reasoning = message.reasoning;
  if (typeof reasoning === "string" && reasoning !== "") {
    out.push({ id: `rs_${hex()}`, summary: [], type: "reasoning", content: [{ text: reasoning, type: "reasoning_text" }], encrypted_content: null, status: null });
  }
  const text = typeof message.content === "string" ? message.content : "";
  const calls = (message.tool_calls ?? []) as { function: { name: string; arguments: string } }[];
  if (text !== "" || (out.length === 0 && calls.length === 0)) {
    out.push({ id: `msg_${hex()}`, content: text ? [outputText(text, null)] : [], role: "assistant", status: "completed", type: "message" });
  }
  for (const c of calls) {
    out.push({ arguments: c.function.arguments, call_id: `call_${hex()}`, name: c.function.name, type: "function_call", id: `fc_${hex()}`, status: "completed" });
  }
  return out;
}

type Send = (type: string, data: Record<string, unknown>) => void;
type One = { reasoning?: string; content?: string; call?: DeltaToolCall };

/** process_simple_stream: `(reasoning)?(output text)?(tool call)*`, each item added when its
 *  first delta comes and done when the next kind starts or the stream ends. */
export class ResponsesItemStream {
  private outputIndex = 0;
  private itemId = "";
  private callId = "";
  private callName = "";
  private started = false;
  private prev: One[] = [];
  private readonly startedCalls = new Set<number>();

  constructor(private readonly send: Send) {}

  /** One chat delta; vLLM's parsers give at most one call per delta, so a delta with several
   *  is fed as several (and one with reasoning and text as the two, in that order). */
  feed(d: Delta): void {
    if (d.reasoning !== undefined) this.one({ reasoning: d.reasoning });
    if (d.content !== undefined) this.one({ content: d.content });
    for (const call of d.tool_calls ?? []) this.one({ call });
  }

  private one(d: One): void {
    if (!this.started) {
      if (d.call) {
        if (d.call.function.name === undefined) return;
        this.openCall(d.call.index, d.call.function.name, d.call.function.arguments ?? "");
      } else if (d.reasoning) this.openReasoning();
      else if (d.content) this.openText();
      this.started = true;
    }
    const last = this.prev.at(-1);
    if (last?.reasoning !== undefined && d.content !== undefined) {
      this.reasoningDone(this.joined("reasoning"));
      this.openText();
      this.textDelta(d.content);
    } else if (d.call) {
      this.callDelta(d.call, last);
    } else if (d.reasoning !== undefined) {
      this.send("response.reasoning_text.delta", { ...this.at(), content_index: 0, delta: d.reasoning });
    } else if (d.content !== undefined) {
      this.textDelta(d.content);
    }
    this.prev.push(d);
  }

  /** Ends whatever item is open. */
  end(): void {
    const last = this.prev.at(-1);
    if (!last) return;
    if (last.call) this.callDone(this.joinedArgs());
    else if (last.reasoning !== undefined) this.reasoningDone(this.joined("reasoning"));
    else if (last.content !== undefined) this.textDone(this.joined("content"));
    this.prev = [];
  }

  private callDelta(call: DeltaToolCall, last: One | undefined): void {
    if (last && !last.call) {
      if (last.reasoning !== undefined) this.reasoningDone(this.joined("reasoning"));
      else this.textDone(this.joined("content"));
      this.prev = [];
    } else if (last?.call && last.call.index !== call.index) {
      this.callDone(this.joinedArgs());
      this.prev = [];
    }
    const name = call.function.name;
    if (name && !this.startedCalls.has(call.index)) this.openCall(call.index, name, call.function.arguments ?? "");
    const args = call.function.arguments;
    if (args) this.send("response.function_call_arguments.delta", { ...this.at(), delta: args });
  }

  private at() {
    return { output_index: this.outputIndex, item_id: this.itemId };
  }

  private joined(k: "reasoning" | "content"): string {
    return this.prev.map((p) => p[k] ?? "").join("");
  }

  private joinedArgs(): string {
    return this.prev.map((p) => p.call?.function.arguments ?? "").join("");
  }

  private openReasoning(): void {
    this.itemId = hex();
    this.send("response.output_item.added", { output_index: this.outputIndex, item: { type: "reasoning", id: this.itemId, summary: [], status: "in_progress" } });
    this.send("response.content_part.added", { ...this.at(), content_index: 0, part: { type: "reasoning_text", text: "" } });
  }

  private reasoningDone(text: string): void {
    const at = { ...this.at(), content_index: 0 };
    this.send("response.reasoning_text.done", { ...at, text });
    this.send("response.content_part.done", { ...at, part: { text, type: "reasoning_text" } });
    this.send("response.output_item.done", { output_index: this.outputIndex, item: { type: "reasoning", content: [{ text, type: "reasoning_text" }], status: "completed", id: this.itemId, summary: [] } });
    this.outputIndex++;
    this.prev = [];
  }

  private openText(): void {
    this.itemId = hex();
    this.send("response.output_item.added", { output_index: this.outputIndex, item: { id: this.itemId, content: [], role: "assistant", status: "in_progress", type: "message" } });
    this.send("response.content_part.added", { ...this.at(), content_index: 0, part: outputText("", []) });
  }

  private textDelta(delta: string): void {
    this.send("response.output_text.delta", { ...this.at(), content_index: 0, delta, logprobs: [] });
  }

  private textDone(text: string): void {
    const at = { ...this.at(), content_index: 0 };
    this.send("response.output_text.done", { ...at, text, logprobs: [] });
    this.send("response.content_part.done", { ...at, part: outputText(text, null) });
    this.send("response.output_item.done", { output_index: this.outputIndex, item: { id: this.itemId, content: [outputText(text, null)], role: "assistant", status: "completed", type: "message", summary: [] } });
    this.outputIndex++;
  }

  private openCall(index: number, name: string, args: string): void {
    this.itemId = hex();
    this.callId = `call_${hex()}`;
    this.callName = name;
    this.startedCalls.add(index);
    this.send("response.output_item.added", { output_index: this.outputIndex, item: { type: "function_call", id: this.itemId, call_id: this.callId, name, arguments: args, status: "in_progress" } });
  }

  private callDone(args: string): void {
    this.send("response.function_call_arguments.done", { ...this.at(), arguments: args, name: this.callName });
    this.send("response.output_item.done", { output_index: this.outputIndex, item: { type: "function_call", name: this.callName, arguments: args, status: "completed", id: this.itemId, call_id: this.callId } });
    this.outputIndex++;
  }
}
