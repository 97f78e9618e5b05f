// Hermes / Qwen2.5 / Qwen3: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
// one call per tag pair (upstream: smg crates/tool_parser/src/parsers/qwen.rs, vLLM
// hermes_tool_parser.py). `parameters` is read when `arguments` is absent, as vLLM does.
import { callFromJsonObject, minifyJson, scanJsonValue } from "../json-text.js";
import type { ToolFormat } from "../tool-format.js";
import type { ParsedCall } from "../types.js";
import { taggedScanner } from "./tagged.js";

/**
 * Arguments the model already serialized (Granite 4 writes `"arguments": "{\"a\": 1}"`) are
 * that object, not a string, as vLLM reads them; any other string stays a string.
 */
export function unwrapSerializedArguments(call: ParsedCall): ParsedCall {
  if (!call.arguments.startsWith('"')) return call;
  const inner = (JSON.parse(call.arguments) as string).trim();
  if (!inner.startsWith("{") || scanJsonValue(inner, 0, true) !== inner.length) return call;
  return { ...call, arguments: minifyJson(inner) };
}

export function jsonCallBody(body: string) {
  const raw = body.trim();
  if (scanJsonValue(raw, 0, true) !== raw.length) return undefined;
  const call = callFromJsonObject(raw, ["arguments", "parameters"]);
  return call ? [unwrapSerializedArguments(call)] : undefined;
}

export const hermes: ToolFormat = {
  name: "hermes",
  specialTokens: [],
  scanner: () => taggedScanner({ open: "<tool_call>", close: "</tool_call>", parseBody: jsonCallBody }),
};
