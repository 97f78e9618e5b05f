// The conversation and tools a chat template sees, rebuilt as vLLM rebuilds them before it
// renders (vllm/entrypoints/chat_utils.py `_parse_chat_message_content` and
// `_postprocess_messages`, "string" content format; the tools as `ChatCompletionToolsParam
// .model_dump()`), so the gateway's prompt is the one `vllm serve` would build:
//  - content: text parts joined with "\n"; null or absent content is "" (templates test it
//    with `in` and `+`, which fail on None);
//  - assistant: tool_calls kept (an empty list dropped), each `arguments` string JSON-parsed,
//    {} when it is not JSON or not given; `reasoning` also under `reasoning_content`, the name
//    templates read (a client's own `reasoning_content` field is not read, as vLLM);
//  - tool: tool_call_id kept; name / task kept when strings; developer: its tools;
//  - every other field is dropped;
//  - tools: {type, function: {name, description, parameters[, strict][, defer_loading]}}, with
//    description and parameters null when absent.
// Pure, on the lossless JSON values (floats and key order as Python reads them).
import { GatewayError } from "../../core/errors.js";
import { LosslessJsonError, parseLosslessJson, type LosslessJson } from "../../tokenizer/lossless-json.js";

type Obj = Map<string, LosslessJson>;

const isObj = (v: LosslessJson | undefined): v is Obj => v instanceof Map;

/** Part types whose text vLLM folds into the message, and the member holding it. */
const TEXT_MEMBER: Readonly<Record<string, string>> = {
  text: "text",
  input_text: "text",
  output_text: "text",
  refusal: "refusal",
  thinking: "thinking",
};

const unsupportedPart = (i: number, j: number, what: string) =>
  new GatewayError("unsupported_content", 400, `messages[${i}].content[${j}]: ${what} cannot be sent to this model (served by VllmEngine engines, where the gateway renders text only)`, undefined, `messages[${i}].content[${j}]`);

/** vLLM's "string" content: the text parts joined with "\n" (a part whose text is null is
 *  skipped); anything else cannot be rendered by a text-only edge tokenizer. */
export function contentText(content: LosslessJson | undefined, i: number): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const texts: string[] = [];
  content.forEach((part, j) => {
    if (typeof part === "string") return void texts.push(part);
    const type = isObj(part) ? part.get("type") : undefined;
    const member = typeof type === "string" ? TEXT_MEMBER[type] : undefined;
    if (!isObj(part) || member === undefined) throw unsupportedPart(i, j, typeof type === "string" ? `a "${type}" part` : "a part without a text type");
    const text = part.get(member);
    if (text === null || text === undefined) return;
    if (typeof text !== "string") throw unsupportedPart(i, j, `a "${type}" part whose ${member} is not a string`);
    texts.push(text);
  });
  return texts.join("\n");
}

/** Python's json.loads of a tool call's arguments, {} when they are not JSON, as vLLM. */
function parsedArguments(args: LosslessJson | undefined): LosslessJson {
  if (typeof args === "string") {
    try {
      return parseLosslessJson(args);
    } catch (err) {
      if (err instanceof LosslessJsonError) return new Map();
      throw err;
    }
  }
  return isObj(args) || Array.isArray(args) ? args : new Map();
}

function toolCallsOf(calls: LosslessJson[]): LosslessJson[] {
  return calls.map((call) => {
    if (!isObj(call)) return call;
    const fn = call.get("function");
    if (!isObj(fn)) return call;
    return new Map(call).set("function", new Map(fn).set("arguments", parsedArguments(fn.get("arguments"))));
  });
}

function conversationMessage(message: LosslessJson, i: number): LosslessJson {
  if (!isObj(message)) return message;
  const role = message.get("role") ?? null;
  const out: Obj = new Map<string, LosslessJson>([
    ["role", role],
    ["content", contentText(message.get("content"), i)],
  ]);
  if (role === "assistant") {
    const calls = message.get("tool_calls");
    if (Array.isArray(calls) && calls.length > 0) out.set("tool_calls", toolCallsOf(calls));
    else if (calls !== undefined && calls !== null && !Array.isArray(calls)) out.set("tool_calls", calls);
    const reasoning = message.get("reasoning");
    if (reasoning !== undefined && reasoning !== null) out.set("reasoning", reasoning).set("reasoning_content", reasoning);
  } else if (role === "tool" && message.has("tool_call_id")) {
    out.set("tool_call_id", message.get("tool_call_id")!);
  }
  for (const key of ["name", "task"]) {
    const v = message.get(key);
    if (typeof v === "string") out.set(key, v);
  }
  if (role === "developer") out.set("tools", message.get("tools") ?? null);
  return out;
}

/** The messages as vLLM hands them to the chat template. */
export function vllmConversation(messages: readonly LosslessJson[]): LosslessJson[] {
  return messages.map(conversationMessage);
}

const FUNCTION_FIELDS = ["name", "description", "parameters"] as const;
const OPTIONAL_FUNCTION_FIELDS = ["strict", "defer_loading"] as const;

function toolDict(tool: LosslessJson): LosslessJson {
  if (!isObj(tool)) return tool;
  const fn = tool.get("function");
  if (!isObj(fn)) return tool;
  const deferred = tool.get("defer_loading") ?? null;
  const fnOut: Obj = new Map();
  for (const k of FUNCTION_FIELDS) fnOut.set(k, fn.get(k) ?? null);
  for (const k of OPTIONAL_FUNCTION_FIELDS) {
    // The tool's defer_loading reaches its function when the function has none (vLLM).
    const v = fn.get(k) ?? (k === "defer_loading" ? deferred : null);
    if (v !== null) fnOut.set(k, v);
  }
  const out: Obj = new Map<string, LosslessJson>([
    ["type", tool.get("type") ?? "function"],
    ["function", fnOut],
  ]);
  if (deferred !== null) out.set("defer_loading", deferred);
  return out;
}

/** The request's tools as vLLM dumps them for the template; null without tools. */
export function vllmToolDicts(tools: LosslessJson | undefined): LosslessJson[] | null {
  return Array.isArray(tools) ? tools.map(toolDict) : null;
}
