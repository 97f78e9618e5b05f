// Every parser by its config name (vLLM's --tool-call-parser / --reasoning-parser names),
// plus the upstream gateway's names for the same formats, so a config written for either
// works.
import { deepseekV3 } from "./formats/deepseek-v3.js";
import { hermes } from "./formats/hermes.js";
import { llama3Json } from "./formats/llama3-json.js";
import { mistral } from "./formats/mistral.js";
import { pythonic } from "./formats/pythonic.js";
import { qwen3Coder } from "./formats/qwen3-coder.js";
import { deepseekR1Reasoning, qwen3Reasoning, type ReasoningFormat } from "./reasoning.js";
import type { ToolFormat } from "./tool-format.js";

export const TOOL_FORMATS: Readonly<Record<string, ToolFormat>> = {
  hermes,
  qwen3_coder: qwen3Coder,
  llama3_json: llama3Json,
  pythonic,
  mistral,
  deepseek_v3: deepseekV3,
};

/** Other names for the same formats: smg's parser names and vLLM's variants. */
export const TOOL_FORMAT_ALIASES: Readonly<Record<string, string>> = {
  qwen: "hermes",
  qwen_xml: "qwen3_coder",
  qwen3_xml: "qwen3_coder",
  llama: "llama3_json",
  llama4_pythonic: "pythonic",
  deepseek: "deepseek_v3",
};

/** Qwen3 "Thinking" checkpoints: Qwen3's markers, always starting inside reasoning. */
const qwen3Thinking: ReasoningFormat = { ...qwen3Reasoning, name: "qwen3_thinking", startsInside: () => true };

export const REASONING_FORMATS: Readonly<Record<string, ReasoningFormat>> = {
  qwen3: qwen3Reasoning,
  qwen3_thinking: qwen3Thinking,
  deepseek_r1: deepseekR1Reasoning,
};

/** Every name a config may give: the formats, their aliases, and "none" (no parsing). */
export const TOOL_PARSER_NAMES = ["none", ...Object.keys(TOOL_FORMATS), ...Object.keys(TOOL_FORMAT_ALIASES)] as const;
export const REASONING_PARSER_NAMES = ["none", ...Object.keys(REASONING_FORMATS)] as const;

export function toolFormat(name: string): ToolFormat | undefined {
  return TOOL_FORMATS[TOOL_FORMAT_ALIASES[name] ?? name];
}

export function reasoningFormat(name: string): ReasoningFormat | undefined {
  return REASONING_FORMATS[name];
}
