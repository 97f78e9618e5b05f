// vLLM's Anthropic Messages API request (vllm/entrypoints/anthropic/protocol.py,
// AnthropicMessagesRequest / AnthropicCountTokensRequest) and its conversion to chat messages
// (serving.py, to_chat_completion_request), rendered by the sim's chat template. Schema errors
// are OpenAiBadRequest: vLLM's global pydantic handler answers them in the OpenAI error shape.
// What the handler itself refuses (model, prompt) is an AnthropicRefusal, answered in
// Anthropic's envelope.
import { bad, bodyObject, isObject, OpenAiBadRequest, optBool, optInt, optKvParams, optNumber, optObject, type Body } from "./body-fields.js";
import type { KvParams } from "./kv-params.js";
import { parseReplyFields, type ReplyFields } from "./openai-fields.js";
import { chatMessagesPrompt, chatMessagesText } from "./openai-parse.js";
import { MAX_CONTEXT, type EngineConfig } from "./spec.js";

export class AnthropicRefusal extends OpenAiBadRequest {}

export interface MessagesRequest {
  promptIds: number[];
  maxTokens: number;
  stream: boolean;
  stop: string[];
  kvParams: KvParams | undefined;
  /** The rendered prompt's text (a <sim-say> script's source). */
  promptText: string;
  /** What the chat request vLLM converts this one into asks of the reply: tools, tool_choice,
   *  response_format, chat_template_kwargs. */
  fields: ReplyFields;
}

const ROLES = ["user", "assistant", "system", "ctx", "msg"];
const BLOCK_TYPES = ["text", "image", "tool_use", "tool_result", "tool_reference", "thinking", "redacted_thinking"];
// Claude Code's per-request attribution header, which vLLM strips from system text.
const BILLING_HEADER = "x-anthropic-billing-header";

type ChatMessage = Record<string, unknown>;

function checkBlocks(v: unknown, field: string): Body[] {
  if (!Array.isArray(v)) bad(field, "must be a string or an array of content blocks");
  return v.map((b, j) => {
    const f = `${field}[${j}]`;
    if (!isObject(b)) bad(f, "must be a content block object");
    if (typeof b.type !== "string" || !BLOCK_TYPES.includes(b.type)) bad(`${f}.type`, `must be one of ${BLOCK_TYPES.join(", ")}`);
    if (b.text !== undefined && b.text !== null && typeof b.text !== "string") bad(`${f}.text`, "must be a string");
    if (b.input !== undefined && b.input !== null && !isObject(b.input)) bad(`${f}.input`, "must be an object");
    return b;
  });
}

function checkMessages(body: Body): Body[] {
  const msgs = body.messages;
  if (!Array.isArray(msgs)) bad("messages", "field required: an array of messages");
  return msgs.map((m, i) => {
    if (!isObject(m)) bad(`messages[${i}]`, "must be an object");
    if (typeof m.role !== "string" || !ROLES.includes(m.role)) bad(`messages[${i}].role`, "must be user, assistant or system");
    if (typeof m.content !== "string") checkBlocks(m.content, `messages[${i}].content`);
    // Roles from newer Claude Code CLIs, mapped as protocol.py's normalize_role does.
    return m.role === "ctx" || m.role === "msg" ? { ...m, role: "user" } : m;
  });
}

function checkCommon(body: Body): Body[] {
  if (typeof body.model !== "string") bad("model", "field required: a string");
  if (body.model === "") bad("model", "Model is required");
  if (body.system !== undefined && body.system !== null && typeof body.system !== "string") checkBlocks(body.system, "system");
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) bad("tools", "must be an array");
    body.tools.forEach((t, i) => {
      if (!isObject(t) || typeof t.name !== "string") bad(`tools[${i}].name`, "must be a string");
      if (!isObject(t.input_schema)) bad(`tools[${i}].input_schema`, "must be an object");
    });
  }
  const tc = optObject(body, "tool_choice");
  if (tc) {
    if (!["auto", "any", "tool", "none"].includes(tc.type as string)) bad("tool_choice.type", "must be auto, any, tool or none");
    if (tc.type === "tool" && (typeof tc.name !== "string" || tc.name === "")) bad("tool_choice.name", "tool_choice.name is required when type is 'tool'");
  }
  return checkMessages(body);
}

const textOf = (b: Body) => (b.type === "text" && typeof b.text === "string" && b.text !== "" ? b.text : undefined);

/** System text: the top-level `system`, then inline system messages, merged into one leading
 *  message (what vLLM does when the chat template requires system first; the sim has no
 *  template, and vLLM merges when there is none). */
function systemMessage(body: Body, msgs: Body[]): ChatMessage[] {
  const parts: string[] = [];
  const add = (content: unknown) => {
    if (typeof content === "string") {
      if (!content.startsWith(BILLING_HEADER)) parts.push(content);
      return;
    }
    for (const b of content as Body[]) {
      const t = textOf(b);
      if (t !== undefined && !t.startsWith(BILLING_HEADER)) parts.push(t);
    }
  };
  if (body.system !== undefined && body.system !== null && body.system !== "") add(body.system);
  for (const m of msgs) if (m.role === "system") add(m.content);
  return parts.length > 0 ? [{ role: "system", content: parts.join("") }] : [];
}

function toolResultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((x): x is Body => isObject(x) && x.type === "text").map((x) => (typeof x.text === "string" ? x.text : "")).join("\n");
}

/** One Anthropic message as chat messages: a user's tool_result blocks become tool messages
 *  ahead of it, and a user message left without content is dropped. */
function convertMessage(m: Body, out: ChatMessage[]): void {
  if (typeof m.content === "string") return void out.push({ role: m.role, content: m.content });
  const parts: Body[] = [];
  const toolCalls: Body[] = [];
  const reasoning: string[] = [];
  for (const b of m.content as Body[]) {
    const t = textOf(b);
    if (t !== undefined) parts.push({ type: "text", text: t });
    else if (b.type === "image" && b.source) parts.push({ type: "image_url" });
    else if (b.type === "thinking" && typeof b.thinking === "string") reasoning.push(b.thinking);
    else if (b.type === "tool_use") toolCalls.push({ id: b.id, type: "function", function: { name: b.name ?? "", arguments: JSON.stringify(b.input ?? {}) } });
    else if (b.type === "tool_result" && m.role === "user") out.push({ role: "tool", tool_call_id: b.tool_use_id ?? "", content: toolResultText(b.content) });
    else if (b.type === "tool_result") parts.push({ type: "text", text: `Tool result: ${typeof b.content === "string" ? b.content : JSON.stringify(b.content ?? "")}` });
  }
  const msg: ChatMessage = { role: m.role };
  if (reasoning.length > 0) msg.reasoning = reasoning.join("");
  if (toolCalls.length > 0) msg.tool_calls = toolCalls;
  if (parts.length === 1 && parts[0]!.type === "text") msg.content = parts[0]!.text;
  else if (parts.length > 0) msg.content = parts;
  if (!(m.role === "user" && !("content" in msg))) out.push(msg);
}

/** The chat messages vLLM renders for this request. */
export function toChatMessages(body: Body, msgs: Body[]): ChatMessage[] {
  const out = systemMessage(body, msgs);
  for (const m of msgs) if (m.role !== "system") convertMessage(m, out);
  return out;
}

/** After the schema: the handler's model check (404) and the rendered prompt. */
function promptOf(body: Body, msgs: Body[], servedModel: string): { ids: number[]; text: string } {
  if (body.model !== servedModel) throw new AnthropicRefusal(`The model \`${String(body.model)}\` does not exist.`, "model", 404);
  let ids: number[];
  let text: string;
  try {
    const chat = toChatMessages(body, msgs);
    ids = chatMessagesPrompt(chat);
    text = chatMessagesText(chat);
  } catch (err) {
    throw new AnthropicRefusal((err as Error).message, "messages");
  }
  if (ids.length === 0) throw new AnthropicRefusal("messages: the prompt cannot be empty", "messages");
  if (ids.length > MAX_CONTEXT) throw new AnthropicRefusal(`messages: prompt of ${ids.length} tokens exceeds max_model_len ${MAX_CONTEXT}`, "messages");
  return { ids, text };
}

/** tool_choice as serving.py's _convert_tool_choice: any is "required", tool a named choice;
 *  unset with tools is "auto". */
function chatToolChoice(tc: Body | undefined, hasTools: boolean): unknown {
  if (!tc) return hasTools ? "auto" : undefined;
  if (tc.type === "any") return "required";
  if (tc.type === "tool") return { type: "function", function: { name: tc.name } };
  return tc.type;
}

/** The reply fields of the chat request vLLM converts to (serving.py _convert_tools,
 *  _convert_tool_choice, _handle_output_config): what the chat path then refuses is the
 *  handler's refusal, in Anthropic's envelope. */
function replyFieldsOf(body: Body, cfg: EngineConfig): ReplyFields {
  const tools = Array.isArray(body.tools) ? (body.tools as Body[]) : undefined;
  const chat: Body = {};
  if (tools) chat.tools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } }));
  const choice = chatToolChoice(optObject(body, "tool_choice"), tools !== undefined);
  if (choice !== undefined) chat.tool_choice = choice;
  const format = isObject(body.output_config) && isObject(body.output_config.format) ? body.output_config.format : undefined;
  if (format && isObject(format.json_schema)) chat.response_format = { type: "json_schema", json_schema: { name: String(format.type), schema: format.json_schema } };
  if (body.chat_template_kwargs !== undefined) chat.chat_template_kwargs = body.chat_template_kwargs;
  try {
    return parseReplyFields("/v1/chat/completions", chat, cfg);
  } catch (err) {
    throw new AnthropicRefusal((err as Error).message, "tool_choice");
  }
}

export function parseMessagesRequest(value: unknown, cfg: EngineConfig): MessagesRequest {
  const body = bodyObject(value);
  const msgs = checkCommon(body);
  if (body.max_tokens === undefined || body.max_tokens === null) bad("max_tokens", "field required");
  const maxTokens = optInt(body, "max_tokens", Number.MIN_SAFE_INTEGER)!;
  if (maxTokens <= 0) bad("max_tokens", "max_tokens must be positive");
  let stop: string[] = [];
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === "string")) bad("stop_sequences", "must be an array of strings");
    stop = body.stop_sequences as string[];
  }
  const stream = optBool(body, "stream") ?? false;
  for (const f of ["temperature", "top_p"]) optNumber(body, f);
  optInt(body, "top_k", Number.MIN_SAFE_INTEGER);
  optObject(body, "metadata");
  const kvParams = optKvParams(body);
  const { ids: promptIds, text: promptText } = promptOf(body, msgs, cfg.model);
  const fields = replyFieldsOf(body, cfg);
  if (promptIds.length + maxTokens > MAX_CONTEXT) {
    throw new AnthropicRefusal(`max_tokens: prompt (${promptIds.length}) + max_tokens (${maxTokens}) exceeds max_model_len ${MAX_CONTEXT}`, "max_tokens");
  }
  return { promptIds, maxTokens, stream, stop, kvParams, promptText, fields };
}

/** POST /v1/messages/count_tokens: the prompt ids the same request would generate from. */
export function parseCountTokensRequest(value: unknown, servedModel: string): number[] {
  const body = bodyObject(value);
  const msgs = checkCommon(body);
  return promptOf(body, msgs, servedModel).ids;
}
