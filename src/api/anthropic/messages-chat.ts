// The Anthropic Messages API over the gateway's chat completions, for models only VllmEngine
// engines serve (the gateway renders the template and builds the answer), as vLLM's own
// vllm/entrypoints/anthropic serving does it: the Messages request becomes a chat request, the
// chat answer becomes the Message. Pure; the stream's events are messages-chat-stream.ts.
import { GatewayError } from "../../core/errors.js";

type Json = Record<string, unknown>;

const invalid = (param: string, what: string) => new GatewayError("invalid_request", 400, `${param}: ${what}`, undefined, param);
const unsupported = (param: string, what: string) => new GatewayError("unsupported_parameter", 400, `${param}: ${what} is not supported on this model's engines`, undefined, param);

/** The chat request for a Messages request (count_tokens too: no max_tokens there). */
export function messagesToChat(body: Json): Json {
  const messages: Json[] = [];
  const system = systemText(body.system);
  if (system !== undefined) messages.push({ role: "system", content: system });
  (body.messages as Json[]).forEach((m, i) => messages.push(...chatMessagesOf(m, `messages[${i}]`)));
  const chat: Json = { model: body.model, messages, stream: body.stream === true };
  if (chat.stream) chat.stream_options = { include_usage: true };
  if (typeof body.max_tokens === "number") chat.max_tokens = body.max_tokens;
  for (const k of ["temperature", "top_p", "top_k"]) if (body[k] !== undefined && body[k] !== null) chat[k] = body[k];
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  Object.assign(chat, chatTools(body));
  const thinking = body.thinking as Json | undefined | null;
  if (thinking?.type === "enabled") chat.chat_template_kwargs = { enable_thinking: true };
  else if (thinking?.type === "disabled") chat.chat_template_kwargs = { enable_thinking: false };
  const user = (body.metadata as Json | undefined | null)?.user_id;
  if (typeof user === "string") chat.user = user;
  return chat;
}

function systemText(system: unknown): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === "string") return system;
  return (system as Json[]).map((b, j) => textBlock(b, `system[${j}]`)).join("");
}

function textBlock(b: unknown, param: string): string {
  const block = b as Json;
  if (block?.type !== "text" || typeof block.text !== "string") throw unsupported(`${param}.type`, `the block type '${String(block?.type)}'`);
  return block.text;
}

/** One Messages turn as chat messages: a user turn's tool_result blocks become tool messages
 *  (before its text, as vLLM orders them); an assistant turn's tool_use blocks its tool_calls. */
export function chatMessagesOf(m: Json, param: string): Json[] {
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  let text = "";
  const calls: Json[] = [];
  const tools: Json[] = [];
  (m.content as Json[]).forEach((b, j) => {
    const at = `${param}.content[${j}]`;
    switch (b?.type) {
      case "text":
        text += textBlock(b, at);
        break;
      case "thinking":
      case "redacted_thinking":
        break; // the model's earlier reasoning is not part of the next prompt
      case "tool_use":
        if (m.role !== "assistant") throw invalid(`${at}.type`, "tool_use blocks belong to assistant turns");
        calls.push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        break;
      case "tool_result":
        if (m.role !== "user") throw invalid(`${at}.type`, "tool_result blocks belong to user turns");
        tools.push({ role: "tool", tool_call_id: b.tool_use_id, content: toolResultText(b.content, `${at}.content`) });
        break;
      default:
        throw unsupported(`${at}.type`, `the block type '${String(b?.type)}'`);
    }
  });
  if (m.role === "assistant") return [calls.length > 0 ? { role: "assistant", content: text, tool_calls: calls } : { role: "assistant", content: text }];
  return text !== "" || tools.length === 0 ? [...tools, { role: "user", content: text }] : tools;
}

function toolResultText(content: unknown, param: string): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw invalid(param, "must be a string or an array of text blocks");
  return content.map((b, j) => textBlock(b, `${param}[${j}]`)).join("");
}

/** `tools` as function tools (input_schema their parameters); tool_choice in chat's terms. */
export function chatTools(body: Json): Json {
  const out: Json = {};
  if (body.tools !== undefined && body.tools !== null && !Array.isArray(body.tools)) throw invalid("tools", "must be an array");
  const tools = ((body.tools as Json[] | undefined) ?? []).map((t, i) => {
    if (t?.type !== undefined && t.type !== null && t.type !== "custom") throw unsupported(`tools[${i}].type`, `the tool type '${String(t.type)}'`);
    if (typeof t.name !== "string" || t.name === "") throw invalid(`tools[${i}].name`, "must be a non-empty string");
    const fn: Json = { name: t.name, parameters: t.input_schema ?? { type: "object", properties: {} } };
    if (typeof t.description === "string") fn.description = t.description;
    return { type: "function", function: fn };
  });
  if (tools.length > 0) out.tools = tools;
  const c = body.tool_choice as Json | undefined | null;
  if (c === undefined || c === null) return out;
  if (c.type === "auto") out.tool_choice = "auto";
  else if (c.type === "any") out.tool_choice = "required";
  else if (c.type === "none") out.tool_choice = "none";
  else if (c.type === "tool") {
    if (!tools.some((t) => (t.function as Json).name === c.name)) throw invalid("tool_choice.name", `${JSON.stringify(c.name)} is not among tools`);
    out.tool_choice = { type: "function", function: { name: c.name } };
  } else throw invalid("tool_choice.type", 'must be "auto", "any", "tool" or "none"');
  if (c.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  return out;
}

/** Chat's finish_reason as the Messages stop_reason; `stopped` is the matched stop string. */
export function stopReason(finish: unknown, stopped: unknown): string {
  if (finish === "tool_calls") return "tool_use";
  if (finish === "length") return "max_tokens";
  if (finish === "stop" && typeof stopped === "string") return "stop_sequence";
  return "end_turn";
}

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
}

export function messagesUsage(u: ChatUsage | undefined): Json {
  return { input_tokens: u?.prompt_tokens ?? 0, output_tokens: u?.completion_tokens ?? 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

/** Arguments as the tool_use block's input: an object; text that is not one stays a string's. */
export function toolInput(args: unknown): unknown {
  if (typeof args !== "string" || args === "") return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args };
  }
}

/** The chat message's output as content blocks, in order: thinking, the text, the tool uses. */
export function contentBlocks(message: Json): Json[] {
  const out: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning !== "") out.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (typeof message.content === "string" && message.content !== "") out.push({ type: "text", text: message.content });
  for (const c of (message.tool_calls as Json[] | undefined) ?? []) {
    const f = c.function as Json;
    out.push({ type: "tool_use", id: c.id, name: f.name, input: toolInput(f.arguments) });
  }
  return out;
}

/** The Message for a whole chat completion. */
export function chatToMessage(chat: Json, body: Json, id: string): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  const reason = stopReason(choice.finish_reason, choice.stop_reason);
  return {
    id,
    type: "message",
    role: "assistant",
    model: body.model,
    content: contentBlocks((choice.message as Json | undefined) ?? {}),
    stop_reason: reason,
    stop_sequence: reason === "stop_sequence" ? choice.stop_reason : null,
    usage: messagesUsage(chat.usage as ChatUsage | undefined),
  };
}
