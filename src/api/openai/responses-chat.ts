// The Responses API over chat completions, for models whose engines have no /v1/responses of
// their own (VllmEngine engines: the gateway tokenizes chat; or `apis_via_chat`), as the
// upstream gateway serves it: the request becomes a chat request, the chat answer becomes the
// response object. Pure; the stream's events are responses-chat-stream.ts.
import { GatewayError } from "../../core/errors.js";
import { refuseUnservedFields } from "./responses-chat-fields.js";
import type { ResponseItem } from "./responses-request.js";

type Json = Record<string, unknown>;

const unsupported = (param: string, what: string) => new GatewayError("unsupported_parameter", 400, `${param}: ${what} is not supported on this model's engines`, undefined, param);

/** The chat request for a Responses request whose conversation is `items` (expanded). */
export function responsesToChat(body: Json, items: readonly ResponseItem[]): Json {
  refuseUnservedFields(body);
  const messages: Json[] = [];
  if (typeof body.instructions === "string") messages.push({ role: "system", content: body.instructions });
  items.forEach((item, i) => {
    for (const m of chatMessagesOf(item, `input[${i}]`)) pushMessage(messages, m);
  });
  const chat: Json = { model: body.model, messages, stream: body.stream === true };
  if (chat.stream) chat.stream_options = { include_usage: true };
  copy(body, chat, ["temperature", "top_p", "top_k", "seed", "stop", "ignore_eos", "presence_penalty", "frequency_penalty", "repetition_penalty", "parallel_tool_calls", "user"]);
  if (typeof body.max_output_tokens === "number") chat.max_tokens = body.max_output_tokens;
  const format = (body.text as { format?: Json } | undefined)?.format;
  if (format?.type === "json_object") chat.response_format = { type: "json_object" };
  else if (format?.type === "json_schema") chat.response_format = { type: "json_schema", json_schema: { name: format.name ?? "schema", schema: format.schema, strict: format.strict ?? false } };
  Object.assign(chat, chatTools(body));
  Object.assign(chat, chatReasoning(body.reasoning));
  if (Array.isArray(body.include) && body.include.includes("message.output_text.logprobs")) {
    chat.logprobs = true;
    if (typeof body.top_logprobs === "number") chat.top_logprobs = body.top_logprobs;
  }
  return chat;
}

function copy(from: Json, to: Json, keys: readonly string[]): void {
  for (const k of keys) if (from[k] !== undefined && from[k] !== null) to[k] = from[k];
}

/** A function call joins the assistant turn before it (its text, the calls made alongside),
 *  so the template renders the turn as the model wrote it: one assistant message. */
function pushMessage(messages: Json[], m: Json): void {
  const last = messages.at(-1);
  if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.content === "" && last?.role === "assistant") {
    last.tool_calls = [...((last.tool_calls as Json[] | undefined) ?? []), ...m.tool_calls];
    return;
  }
  messages.push(m);
}

function chatMessagesOf(item: ResponseItem, param: string): Json[] {
  switch (item.type) {
    case "message":
      return [{ role: item.role === "developer" ? "system" : item.role, content: textOf(item.content, `${param}.content`) }];
    case "function_call":
      // Content "" (not null), as vLLM gives templates: Qwen3's tests the text with `in`.
      return [{ role: "assistant", content: "", tool_calls: [{ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } }] }];
    case "function_call_output":
      return [{ role: "tool", tool_call_id: item.call_id, content: typeof item.output === "string" ? item.output : JSON.stringify(item.output) }];
    case "reasoning":
      return []; // the model's earlier reasoning is not part of the next prompt
    default:
      throw unsupported(`${param}.type`, `the input item type '${String(item.type)}'`);
  }
}

function textOf(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new GatewayError("invalid_request", 400, `${param}: must be a string or an array of content parts`, undefined, param);
  return content
    .map((part, j) => {
      const p = part as Json;
      if ((p.type === "input_text" || p.type === "output_text" || p.type === "text") && typeof p.text === "string") return p.text;
      throw unsupported(`${param}[${j}]`, `the content part '${String(p.type)}'`);
    })
    .join("");
}

/** Function tools and tool_choice in the chat shape. The Responses names of the fields are
 *  checked here, so a 400 names what the client sent (the chat path would name its own). */
export function chatTools(body: Json): Json {
  const out: Json = {};
  const tools = body.tools;
  if (tools !== undefined && tools !== null && !Array.isArray(tools)) throw new GatewayError("invalid_request", 400, "tools: must be an array", undefined, "tools");
  const chatTools = ((tools as unknown[] | undefined) ?? []).map((t, i) => chatTool(t, `tools[${i}]`));
  if (chatTools.length > 0) out.tools = chatTools;
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null) out.tool_choice = chatToolChoice(choice, chatTools);
  return out;
}

function chatTool(tool: unknown, param: string): Json {
  const t = (typeof tool === "object" && tool !== null ? tool : {}) as Json;
  if (t.type !== "function") throw unsupported(`${param}.type`, `the tool type '${String(t.type)}'`);
  if (typeof t.name !== "string" || t.name === "") throw new GatewayError("invalid_request", 400, `${param}.name: must be a non-empty string`, undefined, `${param}.name`);
  const fn: Json = { name: t.name };
  if (t.description !== undefined && t.description !== null) fn.description = t.description;
  fn.parameters = t.parameters ?? { type: "object", properties: {} };
  if (typeof t.strict === "boolean") fn.strict = t.strict;
  return { type: "function", function: fn };
}

/** "auto" / "none" / "required", a named function, or allowed_tools (which the chat path
 *  takes in the Responses' flat shape too); hosted tools are refused. */
function chatToolChoice(choice: unknown, tools: readonly Json[]): unknown {
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  if (typeof choice !== "object" || Array.isArray(choice)) throw new GatewayError("invalid_request", 400, 'tool_choice: must be "none", "auto", "required" or an object', undefined, "tool_choice");
  const c = choice as Json;
  if (c.type === "function") {
    const names = tools.map((t) => (t.function as Json).name);
    if (!names.includes(c.name)) throw new GatewayError("invalid_request", 400, `tool_choice.name: ${JSON.stringify(c.name)} is not among tools (${names.join(", ")})`, undefined, "tool_choice.name");
    return { type: "function", function: { name: c.name } };
  }
  if (c.type === "allowed_tools") return { type: "allowed_tools", mode: c.mode, tools: c.tools };
  throw unsupported("tool_choice", `tool_choice of type '${String(c.type)}'`);
}

/** `reasoning`: the effort goes to the chat template as chat's reasoning_effort. A summary
 *  cannot be written (there is no summarizer), so only "auto" (which may give none) passes. */
export function chatReasoning(reasoning: unknown): Json {
  if (reasoning === undefined || reasoning === null) return {};
  if (typeof reasoning !== "object" || Array.isArray(reasoning)) throw new GatewayError("invalid_request", 400, "reasoning: must be an object", undefined, "reasoning");
  const r = reasoning as Json;
  for (const field of ["summary", "generate_summary"]) {
    const v = r[field];
    if (v !== undefined && v !== null && v !== "auto") throw unsupported(`reasoning.${field}`, `a reasoning summary ('${String(v)}')`);
  }
  return r.effort !== undefined && r.effort !== null ? { reasoning_effort: r.effort } : {};
}

/** What the response object echoes from its request. */
export function responseEcho(body: Json): Json {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: body.temperature ?? null,
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_p: body.top_p ?? null,
    text: body.text ?? { format: { type: "text" } },
    reasoning: body.reasoning ?? null,
    truncation: body.truncation ?? "disabled",
  };
}

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
}

export function responsesUsage(u: ChatUsage | undefined): Json {
  const input = u?.prompt_tokens ?? 0;
  const output = u?.completion_tokens ?? 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output };
}

/** The chat message's output as Responses output items, in order: reasoning, the text, the calls. */
export function outputItems(message: Json, id: string): Json[] {
  const out: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning !== "") out.push({ type: "reasoning", id: `rs_${id}`, summary: [], content: [{ type: "reasoning_text", text: reasoning }], status: "completed" });
  if (typeof message.content === "string" && message.content !== "") {
    out.push({ type: "message", id: `msg_${id}`, status: "completed", role: "assistant", content: [{ type: "output_text", text: message.content, annotations: [], logprobs: [] }] });
  }
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  calls.forEach((c, i) => {
    const f = c.function as Json;
    out.push({ type: "function_call", id: `fc_${id}_${i}`, call_id: c.id, name: f.name, arguments: f.arguments, status: "completed" });
  });
  return out;
}

/** Under a length cap the last item is the one cut off: incomplete, as OpenAI marks it. */
function cutOff(items: Json[], length: boolean): Json[] {
  const last = items.at(-1);
  if (length && last) last.status = "incomplete";
  return items;
}

/** The response object for a whole chat completion. */
export function chatToResponse(chat: Json, body: Json, id: string, createdAt: number): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  const length = choice.finish_reason === "length";
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: length ? "incomplete" : "completed",
    incomplete_details: length ? { reason: "max_output_tokens" } : null,
    error: null,
    model: body.model,
    output: cutOff(outputItems((choice.message as Json | undefined) ?? {}, id.slice("resp_".length)), length),
    usage: responsesUsage(chat.usage as ChatUsage | undefined),
    ...responseEcho(body),
  };
}
