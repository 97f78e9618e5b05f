// A chat completion stream as the Responses API's events (the sequence the `openai` SDK's
// types define): response.created and .in_progress, then per output item (reasoning, the
// message, each function call) its .added, deltas and .done events, then response.completed
// (or .incomplete) with the whole response. One item is open at a time, in the order the
// chunks bring them. Pure: chunks in, SSE text out.
import type { ChatEventWriter } from "../chat-events.js";
import { responseEcho, responsesUsage, type ChatUsage } from "./responses-chat.js";

type Json = Record<string, unknown>;

interface OpenItem {
  kind: "reasoning" | "message" | "function_call";
  index: number;
  id: string;
  text: string;
  /** For a function call: the chat stream's tool call index, call id and name. */
  callIndex?: number;
  callId?: string;
  name?: string;
}

export class ResponsesEventWriter implements ChatEventWriter {
  private seq = 0;
  private readonly output: Json[] = [];
  private open: OpenItem | undefined;
  private finish: string | null = null;
  private usage: ChatUsage | undefined;

  constructor(
    private readonly body: Json,
    private readonly id: string,
    private readonly createdAt: number,
  ) {}

  start(): string {
    const response = this.response("in_progress");
    return this.event("response.created", { response }) + this.event("response.in_progress", { response });
  }

  /** One chat chunk's events. */
  chunk(chunk: Json): string {
    if (chunk.usage) this.usage = chunk.usage as ChatUsage;
    const choice = ((chunk.choices as Json[] | undefined) ?? [])[0];
    if (!choice) return "";
    let out = "";
    const delta = (choice.delta as Json | undefined) ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === "string" && reasoning !== "") out += this.text("reasoning", reasoning);
    if (typeof delta.content === "string" && delta.content !== "") out += this.text("message", delta.content);
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) out += this.toolCall(call);
    if (typeof choice.finish_reason === "string") this.finish = choice.finish_reason;
    return out;
  }

  /** The closing events, after the chat stream's [DONE]. */
  end(): string {
    // The item the length cap cut off is incomplete, as OpenAI marks it.
    const out = this.close(this.finish === "length" ? "incomplete" : "completed");
    const final = this.final();
    return out + this.event(final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
  }

  /** The whole response once the stream ended: incomplete when length-capped. */
  final(): Json {
    return this.response(this.finish === "length" ? "incomplete" : "completed");
  }

  /** The stream's `error` event, for an error the chat stream reported in-band. */
  error(e: Json): string {
    return this.event("error", { code: e.code ?? null, message: e.message ?? "", param: e.param ?? null });
  }

  /** The response object so far, with `status`. */
  response(status: string): Json {
    return {
      id: this.id,
      object: "response",
      created_at: this.createdAt,
      status,
      incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
      error: null,
      model: this.body.model,
      output: [...this.output],
      usage: status === "in_progress" ? null : responsesUsage(this.usage),
      ...responseEcho(this.body),
    };
  }

  private text(kind: "reasoning" | "message", delta: string): string {
    let out = "";
    if (this.open?.kind !== kind) out += this.close() + this.openItem(kind);
    const item = this.open!;
    item.text += delta;
    const type = kind === "message" ? "response.output_text.delta" : "response.reasoning_text.delta";
    return out + this.event(type, { item_id: item.id, output_index: item.index, content_index: 0, delta, ...(kind === "message" ? { logprobs: [] } : {}) });
  }

  private toolCall(call: Json): string {
    const index = typeof call.index === "number" ? call.index : 0;
    const fn = (call.function as Json | undefined) ?? {};
    let out = "";
    if (this.open?.kind !== "function_call" || this.open.callIndex !== index) {
      out += this.close();
      out += this.openItem("function_call", { callIndex: index, callId: String(call.id ?? `call_${index}`), name: String(fn.name ?? "") });
    }
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    if (args === "") return out;
    this.open!.text += args;
    return out + this.event("response.function_call_arguments.delta", { item_id: this.open!.id, output_index: this.open!.index, delta: args });
  }

  private openItem(kind: OpenItem["kind"], call: Partial<OpenItem> = {}): string {
    const index = this.output.length;
    const prefix = kind === "message" ? "msg" : kind === "reasoning" ? "rs" : "fc";
    const item: OpenItem = { kind, index, id: `${prefix}_${this.id.slice("resp_".length)}_${index}`, text: "", ...call };
    this.open = item;
    this.output.push(this.itemObject(item, "in_progress"));
    let out = this.event("response.output_item.added", { output_index: index, item: this.output[index] });
    // The SDK's accumulator adds text to a content part it was told of: one part per item.
    const part = contentPart(kind, "");
    if (part) out += this.event("response.content_part.added", { item_id: item.id, output_index: index, content_index: 0, part });
    return out;
  }

  private close(status: "completed" | "incomplete" = "completed"): string {
    const item = this.open;
    if (!item) return "";
    this.open = undefined;
    const done = this.itemObject(item, status);
    this.output[item.index] = done;
    const at = { item_id: item.id, output_index: item.index };
    let out = "";
    if (item.kind === "message") {
      out += this.event("response.output_text.done", { ...at, content_index: 0, text: item.text, logprobs: [] });
      out += this.event("response.content_part.done", { ...at, content_index: 0, part: contentPart("message", item.text) });
    } else if (item.kind === "reasoning") {
      out += this.event("response.reasoning_text.done", { ...at, content_index: 0, text: item.text });
      out += this.event("response.content_part.done", { ...at, content_index: 0, part: contentPart("reasoning", item.text) });
    } else {
      out += this.event("response.function_call_arguments.done", { ...at, name: item.name, arguments: item.text });
    }
    return out + this.event("response.output_item.done", { output_index: item.index, item: done });
  }

  private itemObject(item: OpenItem, status: "in_progress" | "completed" | "incomplete"): Json {
    const done = status !== "in_progress";
    const content = done ? [contentPart(item.kind, item.text)] : [];
    if (item.kind === "message") return { type: "message", id: item.id, status, role: "assistant", content };
    if (item.kind === "reasoning") return { type: "reasoning", id: item.id, summary: [], content, status };
    return { type: "function_call", id: item.id, call_id: item.callId, name: item.name, arguments: done ? item.text : "", status };
  }

  private event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }
}

/** An item's one content part: output_text for a message, reasoning_text for reasoning. */
function contentPart(kind: OpenItem["kind"], text: string): Json | undefined {
  if (kind === "message") return { type: "output_text", text, annotations: [], logprobs: [] };
  if (kind === "reasoning") return { type: "reasoning_text", text };
  return undefined;
}
