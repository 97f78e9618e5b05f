// Which parsers a model gets: the config's, else the longest pattern of smg's tables the
// model name contains (case-insensitive), else its model type's; a table row naming a parser
// this gateway lacks gives no parser, not a shorter pattern's.
import { expect, it } from "vitest";
import { REASONING_PARSERS, TOOL_PARSERS } from "../../../src/config/schema.js";
import { REASONING_PARSER_NAMES, TOOL_PARSER_NAMES, toolFormat } from "../../../src/parsers/registry.js";
import { longestMatch, resolveParsers } from "../../../src/parsers/resolve.js";

const table: [model: string, type: string | undefined, config: object, tool: [string, string, string?], reasoning: [string, string, string?]][] = [
  ["Qwen/Qwen3-8B", undefined, {}, ["hermes", "model name", "qwen"], ["qwen3", "model name", "qwen3"]],
  ["Qwen/Qwen2.5-7B-Instruct", undefined, {}, ["hermes", "model name", "qwen"], ["qwen3", "model name", "qwen"]],
  ["Qwen/Qwen3-Coder-30B-A3B-Instruct", undefined, {}, ["qwen3_coder", "model name", "qwen/qwen3-coder"], ["qwen3", "model name", "qwen3"]],
  ["qwen3.5-122b", undefined, {}, ["qwen3_coder", "model name", "qwen3.5"], ["qwen3", "model name", "qwen3"]],
  ["Qwen/Qwen3-30B-A3B-Thinking-2507", undefined, {}, ["hermes", "model name", "qwen"], ["qwen3", "model name", "qwen3"]],
  ["meta-llama/Llama-3.2-3B-Instruct", undefined, {}, ["llama3_json", "model name", "llama-3.2"], ["none", "none"]],
  ["meta-llama/Llama-3.3-70B-Instruct", undefined, {}, ["llama3_json", "model name", "llama-3"], ["none", "none"]],
  ["meta-llama/Llama-4-Scout-17B-16E-Instruct", undefined, {}, ["pythonic", "model name", "llama-4"], ["none", "none"]],
  ["mistral-small-24b", undefined, {}, ["mistral", "model name", "mistral-"], ["none", "none"]],
  ["deepseek-ai/DeepSeek-V3-0324", undefined, {}, ["deepseek_v3", "model name", "deepseek-ai/deepseek-v3"], ["none", "none"]],
  ["deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", undefined, {}, ["pythonic", "model name", "deepseek-"], ["deepseek_r1", "model name", "deepseek-r1"]],
  // smg's row for V3.1 names a parser this gateway lacks: none, not the shorter deepseek-v3 row's
  ["deepseek-ai/DeepSeek-V3.1", undefined, {}, ["deepseek31", "model name", "deepseek-ai/deepseek-v3.1"], ["deepseek_v31", "model name", "deepseek-v3.1"]],
  ["gpt-4o-mini", undefined, {}, ["json", "model name", "gpt-4o"], ["none", "none"]],
  // served under an alias: the model type decides
  ["chat", "qwen3_moe", {}, ["hermes", "model type"], ["qwen3", "model type"]],
  ["assistant", "llama4", {}, ["pythonic", "model type"], ["none", "none"]],
  ["assistant", "gemma3", {}, ["none", "none"], ["none", "none"]],
  // the config wins over both
  ["Qwen/Qwen3-8B", "qwen3", { tool_parser: "qwen3_coder", reasoning_parser: "none" }, ["qwen3_coder", "config"], ["none", "config"]],
  ["anything", undefined, { tool_parser: "qwen" }, ["hermes", "config"], ["none", "none"]],
];

it.each(table)("%s (type %s, config %j)", (model, type, config, [tool, toolSource, toolPattern], [reasoning, reasoningSource, reasoningPattern]) => {
  const got = resolveParsers(model, type, config);
  expect([got.tool.name, got.tool.source, got.tool.pattern]).toEqual([tool, toolSource, toolPattern]);
  expect([got.reasoning.name, got.reasoning.source, got.reasoning.pattern]).toEqual([reasoning, reasoningSource, reasoningPattern]);
  // a format is there exactly when the gateway has the chosen parser
  expect(got.tool.format?.name).toBe(toolFormat(tool)?.name);
  expect(got.tool.format === undefined).toBe(toolFormat(tool) === undefined);
});

it("an alias resolves to its format", () => {
  expect(resolveParsers("x", undefined, { tool_parser: "qwen" }).tool.format?.name).toBe("hermes");
  expect(resolveParsers("x", undefined, { tool_parser: "deepseek" }).tool.format?.name).toBe("deepseek_v3");
});

it("longestMatch picks the longest pattern, ignoring case", () => {
  const rows = [["qwen", "a"], ["QWEN3-coder", "b"], ["coder", "c"]] as const;
  expect(longestMatch("org/Qwen3-Coder-Next", rows)).toEqual(["QWEN3-coder", "b"]);
  expect(longestMatch("llama", rows)).toBeUndefined();
});

it("the config schema lists exactly the registry's parser names", () => {
  expect([...TOOL_PARSERS].sort()).toEqual([...TOOL_PARSER_NAMES].sort());
  expect([...REASONING_PARSERS].sort()).toEqual([...REASONING_PARSER_NAMES].sort());
});
