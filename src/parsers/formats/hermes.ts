// Hermes / Qwen2.5 / Qwen3: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
// one call per tag pair (upstream: smg crates/tool_parser/src/parsers/qwen.rs, vLLM
// hermes_tool_parser.py). `parameters` is read when `arguments` is absent, as vLLM does.
import { callFromJsonObject, scanJsonValue } from "../json-text.js";
import type { ToolFormat } from "../tool-format.js";
import { taggedScanner } from "./tagged.js";

export function jsonCallBody(body: string) {
  const raw = body.trim();
  if (scanJsonValue(raw, 0, true) !== raw.length) return undefined;
  const call = callFromJsonObject(raw, ["arguments", "parameters"]);
  return call ? [call] : undefined;
}

export const hermes: ToolFormat = {
  name: "hermes",
  specialTokens: [],
  scanner: () => taggedScanner({ open: "<tool_call>", close: "</tool_call>", parseBody: jsonCallBody }),
};
