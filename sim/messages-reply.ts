// What vLLM's Anthropic serving (vllm/entrypoints/anthropic/serving.py) makes of the chat
// reply it converted the request into: messages_full_converter's content blocks, and
// message_stream_converter's content block events from the chat stream's deltas (thinking,
// text, tool_use with its arguments as input_json_delta; a thinking block ends with a
// signature_delta).
import { randomUUID } from "node:crypto";
import type { Delta } from "./chat-reply.js";

const hex = () => randomUUID().replace(/-/g, "");

/** messages_full_converter's content: thinking (with a signature), the text when there is
 *  any, then one tool_use block per call with its arguments parsed. */
export function messageContent(message: Record<string, unknown>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (typeof message.reasoning === "string" && message.reasoning !== "") out.push({ type: "thinking", thinking: message.reasoning, signature: hex() });
  if (typeof message.content === "string" && message.content !== "") out.push({ type: "text", text: message.content });
  const calls = (message.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[];
  for (const c of calls) out.push({ type: "tool_use", id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) as unknown });
  return out;
}

type Send = (event: string, data: Record<string, unknown>) => void;

/** message_stream_converter's block state: one block open at a time; a delta of another kind
 *  (or another call) closes it and opens the next at the next index. */
export class MessagesBlockStream {
  private index = 0;
  private open: { type: string; toolUseId?: string; signature?: string } | undefined;
  private readonly callIds = new Map<number, string>();

  constructor(private readonly send: Send) {}

  feed(d: Delta): void {
    if (d.reasoning) this.delta("thinking", { type: "thinking_delta", thinking: d.reasoning });
    if (d.content) this.delta("text", { type: "text_delta", text: d.content });
    for (const call of d.tool_calls ?? []) {
      if (call.id !== undefined) {
        this.callIds.set(call.index, call.id);
        if (this.open?.toolUseId !== call.id && call.function.name !== undefined) {
          this.close();
          this.start({ type: "tool_use", id: call.id, name: call.function.name, input: {} }, call.id);
        }
      }
      const id = this.callIds.get(call.index);
      if (call.function.arguments && id !== undefined && this.open?.toolUseId === id) {
        this.send("content_block_delta", { index: this.index, delta: { type: "input_json_delta", partial_json: call.function.arguments } });
      }
    }
  }

  /** Ends the open block, a thinking block with its signature first. */
  close(): void {
    if (!this.open) return;
    if (this.open.signature) this.send("content_block_delta", { index: this.index, delta: { type: "signature_delta", signature: this.open.signature } });
    this.send("content_block_stop", { index: this.index });
    this.open = undefined;
    this.index++;
  }

  private delta(type: "thinking" | "text", delta: Record<string, unknown>): void {
    if (this.open?.type !== type) {
      this.close();
      this.start(type === "thinking" ? { type, thinking: "" } : { type, text: "" });
    }
    this.send("content_block_delta", { index: this.index, delta });
  }

  private start(block: Record<string, unknown>, toolUseId?: string): void {
    this.send("content_block_start", { index: this.index, content_block: block });
    this.open = { type: block.type as string, toolUseId, signature: block.type === "thinking" ? hex() : undefined };
  }
}
