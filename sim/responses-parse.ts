// vLLM's Responses API request (vllm/entrypoints/openai/responses/protocol.py, ResponsesRequest,
// with kv_transfer_params from vLLM PR 37424) and its input as chat messages (utils.py,
// construct_input_messages), rendered by the sim's chat template. Every refusal is in the
// OpenAI error shape; the handler's own carry vLLM's "invalid_request_error" type.
import { bad, bodyObject, isObject, OpenAiBadRequest, optBool, optInt, optKvParams, optNumber, optObject, optStopList, optString, type Body } from "./body-fields.js";
import type { KvParams } from "./kv-params.js";
import { parseReplyFields, type ReplyFields } from "./openai-fields.js";
import { chatMessagesPrompt, chatMessagesText } from "./openai-parse.js";
import { MAX_CONTEXT, type EngineConfig } from "./spec.js";

export interface ResponsesRequest {
  /** The response id: the body's `request_id` (a vLLM extension) or "resp_<hex>". */
  id: string;
  promptIds: number[];
  maxTokens: number;
  stream: boolean;
  stop: string[];
  ignoreEos: boolean;
  seed: number | undefined;
  kvParams: KvParams | undefined;
  /** Request fields the response object echoes back. */
  echo: Body;
  /** The rendered prompt's text (a <sim-say> script's source). */
  promptText: string;
  /** What the function tools, tool_choice and text.format ask of the reply. */
  fields: ReplyFields;
}

type ChatMessage = Record<string, unknown>;

const ROLES = ["user", "assistant", "system", "developer"];
const TEXT_PARTS = ["input_text", "output_text"];

function messageItem(item: Body, field: string): ChatMessage {
  if (typeof item.role !== "string" || !ROLES.includes(item.role)) bad(`${field}.role`, `must be one of ${ROLES.join(", ")}`);
  if (typeof item.content === "string") return { role: item.role, content: item.content };
  if (!Array.isArray(item.content)) bad(`${field}.content`, "must be a string or an array of content parts");
  const parts = item.content.map((c, j) => {
    if (!isObject(c) || typeof c.type !== "string") bad(`${field}.content[${j}]`, "must be a content part with a type");
    if (!TEXT_PARTS.includes(c.type)) return { type: c.type };
    if (typeof c.text !== "string") bad(`${field}.content[${j}].text`, "must be a string");
    return { type: "text", text: c.text };
  });
  return { role: item.role, content: parts };
}

/** One input item as a chat message: a function call becomes an assistant tool call, its
 *  output a tool message, reasoning an assistant message without content. */
function inputItem(item: unknown, i: number): ChatMessage {
  const field = `input[${i}]`;
  if (!isObject(item)) bad(field, "must be an object");
  const type = item.type ?? "message";
  if (type === "message") return messageItem(item, field);
  const str = (k: string) => (typeof item[k] === "string" ? (item[k] as string) : bad(`${field}.${k}`, "must be a string"));
  if (type === "function_call") {
    return { role: "assistant", tool_calls: [{ id: str("call_id"), type: "function", function: { name: str("name"), arguments: str("arguments") } }] };
  }
  if (type === "function_call_output") {
    const out = item.output;
    const content = typeof out === "string" ? out : Array.isArray(out) ? messageItem({ role: "user", content: out }, field).content : bad(`${field}.output`, "must be a string or an array");
    return { role: "tool", tool_call_id: str("call_id"), content };
  }
  if (type === "reasoning") return { role: "assistant" };
  bad(`${field}.type`, `unsupported input item type ${JSON.stringify(type)}`);
}

export function toChatMessages(body: Body): ChatMessage[] {
  const out: ChatMessage[] = [];
  const instructions = optString(body, "instructions");
  if (instructions) out.push({ role: "system", content: instructions });
  if (typeof body.input === "string") out.push({ role: "user", content: body.input });
  else if (Array.isArray(body.input)) out.push(...body.input.map(inputItem));
  else bad("input", "field required: a string or an array of input items");
  return out;
}

/** tool_choice as protocol.py's check_tool_usage leaves it: "none" without tools. */
function toolChoiceOf(body: Body): unknown {
  const tools = body.tools ?? [];
  if (!Array.isArray(tools)) bad("tools", "must be an array");
  const choice = body.tool_choice ?? "auto";
  if (tools.length > 0) return choice;
  if (choice === "auto" || choice === "none") return "none";
  throw new OpenAiBadRequest(
    choice === "required" ? "Tool choice 'required' must be specified with 'tools' parameter." : "Tool choice 'function' not found in 'tools' parameter.",
    "tool_choice",
  );
}

function echoOf(body: Body): Body {
  for (const f of ["temperature", "top_p"]) optNumber(body, f);
  const metadata = optObject(body, "metadata") ?? null;
  return {
    instructions: optString(body, "instructions") ?? null, metadata, tool_choice: toolChoiceOf(body), tools: body.tools ?? [],
    temperature: body.temperature ?? 1.0, top_p: body.top_p ?? 1.0, parallel_tool_calls: optBool(body, "parallel_tool_calls") ?? true,
    max_tool_calls: optInt(body, "max_tool_calls", 0) ?? null, reasoning: optObject(body, "reasoning") ?? null,
    service_tier: optString(body, "service_tier") ?? "auto", text: optObject(body, "text") ?? null,
    truncation: optString(body, "truncation") ?? "disabled", user: optString(body, "user") ?? null,
  };
}

/** The handler's refusals, in create_responses' order, before anything runs. With vLLM's
 *  default VLLM_ENABLE_RESPONSES_API_STORE=0 nothing is ever stored, so `store` is ignored,
 *  every previous_response_id is unknown and background mode is refused. */
function handlerChecks(body: Body, servedModel: string): void {
  if (body.model !== undefined && body.model !== null && body.model !== servedModel) {
    throw new OpenAiBadRequest(`The model \`${String(body.model)}\` does not exist.`, "model", 404);
  }
  if (optBool(body, "background") === true) {
    throw new OpenAiBadRequest("This vLLM engine does not support `store=True` and therefore does not support the background mode.", "background", 400, "invalid_request_error");
  }
  const prev = optString(body, "previous_response_id");
  if (prev !== undefined) throw new OpenAiBadRequest(`Response with id '${prev}' not found.`, "response_id", 404, "invalid_request_error");
}

/** The function tools, tool_choice and text.format in chat's terms, for the parsers and the
 *  structured-output constraint (other tool types are not modelled). */
function replyFieldsOf(body: Body, echo: Body, cfg: EngineConfig): ReplyFields {
  const chat: Body = {};
  const tools = (echo.tools as unknown[]).filter((t): t is Body => isObject(t) && t.type === "function");
  if (tools.length > 0) {
    chat.tools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }));
    const tc = echo.tool_choice;
    chat.tool_choice = isObject(tc) ? { type: "function", function: { name: tc.name } } : tc;
  }
  const format = isObject(echo.text) && isObject(echo.text.format) ? echo.text.format : undefined;
  if (format?.type === "json_schema") chat.response_format = { type: "json_schema", json_schema: { name: format.name, schema: format.schema } };
  else if (format?.type === "json_object") chat.response_format = { type: "json_object" };
  return parseReplyFields("/v1/chat/completions", chat, cfg, false);
}

export function responseIdOf(json: unknown): string | undefined {
  return isObject(json) && typeof json.request_id === "string" && json.request_id !== "" ? json.request_id : undefined;
}

export function parseResponsesRequest(value: unknown, cfg: EngineConfig, id: string): ResponsesRequest {
  const servedModel = cfg.model;
  const body = bodyObject(value);
  optString(body, "model");
  optBool(body, "store");
  if (body.prompt !== undefined && body.prompt !== null) bad("prompt", "prompt template is not supported");
  const messages = toChatMessages(body);
  const maxOutput = optInt(body, "max_output_tokens", 1);
  const stream = optBool(body, "stream") ?? false;
  const stop = optStopList(body, "stop");
  const ignoreEos = optBool(body, "ignore_eos") ?? false;
  const seed = optInt(body, "seed", Number.MIN_SAFE_INTEGER);
  const kvParams = optKvParams(body);
  const echo = echoOf(body);
  handlerChecks(body, servedModel);
  const fields = replyFieldsOf(body, echo, cfg);
  const promptIds = chatMessagesPrompt(messages, "input");
  const promptText = chatMessagesText(messages, "input");
  if (promptIds.length === 0) bad("input", "the prompt cannot be empty");
  if (promptIds.length >= MAX_CONTEXT) {
    throw new OpenAiBadRequest(`The engine prompt length ${promptIds.length} exceeds the max_model_len ${MAX_CONTEXT}. Please reduce prompt.`, "input", 400, "invalid_request_error");
  }
  if (maxOutput !== undefined && promptIds.length + maxOutput > MAX_CONTEXT) {
    bad("max_output_tokens", `prompt (${promptIds.length}) + max_output_tokens (${maxOutput}) exceeds max_model_len ${MAX_CONTEXT}`);
  }
  // Unset, vLLM's default is what is left of the context window.
  const maxTokens = maxOutput ?? MAX_CONTEXT - promptIds.length;
  return { id, promptIds, maxTokens, stream, stop, ignoreEos, seed, kvParams, echo, promptText, fields };
}
