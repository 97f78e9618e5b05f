// A chat completion stream as the Messages API's events (the sequence @anthropic-ai/sdk's
// MessageStream accumulates): message_start, then per content block (thinking, text, each
// tool use) content_block_start, its deltas and content_block_stop, then message_delta with
// the stop_reason and usage, and message_stop. One block is open at a time, in the order the
// chunks bring them. Pure: chunks in, SSE text out.
import { GatewayError } from "../../core/errors.js";
import { anthropicErrorEvent } from "../../errors/anthropic.js";
import type { ChatEventWriter } from "../chat-events.js";
import { messagesUsage, stopReason, type ChatUsage } from "./messages-chat.js";

type Json = Record<string, unknown>;

type Kind = "thinking" | "text" | "tool_use";

export class MessagesEventWriter implements ChatEventWriter {
  private index = -1;
  private open: Kind | undefined;
  private callIndex: number | undefined;
  private finish: unknown = null;
  private stopped: unknown = null;
  private usage: ChatUsage | undefined;

  constructor(
    private readonly body: Json,
    private readonly id: string,
  ) {}

  start(): string {
    const message = { id: this.id, type: "message", role: "assistant", model: this.body.model, content: [], stop_reason: null, stop_sequence: null, usage: messagesUsage(undefined) };
    return this.event("message_start", { message });
  }

  /** The chat stream's in-band error, as Anthropic's error event (the stream ends there). */
  error(e: Json): string {
    return anthropicErrorEvent(new GatewayError(String(e.code ?? "engine_error"), 500, String(e.message ?? "")));
  }

  /** One chat chunk's events. */
  chunk(chunk: Json): string {
    if (chunk.usage) this.usage = chunk.usage as ChatUsage;
    const choice = ((chunk.choices as Json[] | undefined) ?? [])[0];
    if (!choice) return "";
    let out = "";
    const delta = (choice.delta as Json | undefined) ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === "string" && reasoning !== "") out += this.text("thinking", reasoning);
    if (typeof delta.content === "string" && delta.content !== "") out += this.text("text", delta.content);
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) out += this.toolCall(call);
    if (typeof choice.finish_reason === "string") {
      this.finish = choice.finish_reason;
      this.stopped = choice.stop_reason ?? null;
    }
    return out;
  }

  /** The closing events, after the chat stream's [DONE]. */
  end(): string {
    const reason = stopReason(this.finish, this.stopped);
    const usage = messagesUsage(this.usage);
    return this.close() + this.event("message_delta", { delta: { stop_reason: reason, stop_sequence: reason === "stop_sequence" ? this.stopped : null }, usage }) + this.event("message_stop", {});
  }

  private text(kind: "thinking" | "text", text: string): string {
    const out = this.open === kind ? "" : this.openBlock(kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" }, kind);
    const delta = kind === "text" ? { type: "text_delta", text } : { type: "thinking_delta", thinking: text };
    return out + this.event("content_block_delta", { index: this.index, delta });
  }

  private toolCall(call: Json): string {
    const at = typeof call.index === "number" ? call.index : 0;
    const fn = (call.function as Json | undefined) ?? {};
    let out = "";
    if (this.open !== "tool_use" || this.callIndex !== at) {
      out += this.openBlock({ type: "tool_use", id: String(call.id ?? `toolu_${at}`), name: String(fn.name ?? ""), input: {} }, "tool_use");
      this.callIndex = at;
    }
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    if (args === "") return out;
    return out + this.event("content_block_delta", { index: this.index, delta: { type: "input_json_delta", partial_json: args } });
  }

  private openBlock(block: Json, kind: Kind): string {
    const out = this.close();
    this.index += 1;
    this.open = kind;
    return out + this.event("content_block_start", { index: this.index, content_block: block });
  }

  private close(): string {
    if (this.open === undefined) return "";
    this.open = undefined;
    return this.event("content_block_stop", { index: this.index });
  }

  private event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
  }
}
