// Which parsers a model's replies go through: the config's choice when it made one, else the
// longest pattern of the upstream gateway's table the model name contains (patterns.ts),
// else its model type's row. Pure; the admin API shows the result and where it came from.
import { REASONING_PARSER_BY_MODEL_TYPE, REASONING_PARSER_PATTERNS, TOOL_PARSER_BY_MODEL_TYPE, TOOL_PARSER_PATTERNS } from "./patterns.js";
import { reasoningFormat, toolFormat } from "./registry.js";
import type { ReasoningFormat } from "./reasoning.js";
import type { ToolFormat } from "./tool-format.js";

export interface ParserConfig {
  tool_parser?: string;
  reasoning_parser?: string;
}

export interface ParserChoice<F> {
  /** The parser's name (canonical when the gateway has it; a table row may name one it lacks:
   *  `format` is then undefined and replies are not parsed). "none" when nothing applies. */
  name: string;
  format: F | undefined;
  /** Why: "config", "model name" (with the pattern), "model type", or "none". */
  source: "config" | "model name" | "model type" | "none";
  pattern?: string;
}

export interface ResolvedParsers {
  tool: ParserChoice<ToolFormat>;
  reasoning: ParserChoice<ReasoningFormat>;
}

/** The longest pattern `name` contains, case-insensitively, and its parser. */
export function longestMatch(name: string, table: readonly (readonly [string, string])[]): readonly [string, string] | undefined {
  const lower = name.toLowerCase();
  let best: readonly [string, string] | undefined;
  for (const row of table) {
    if (lower.includes(row[0].toLowerCase()) && (!best || row[0].length > best[0].length)) best = row;
  }
  return best;
}

/** The choice under its canonical name when the gateway has it (smg's table and config
 *  aliases say "qwen" for hermes). */
function named<F extends { name: string }>(name: string, lookup: (name: string) => F | undefined, source: ParserChoice<F>["source"], pattern?: string): ParserChoice<F> {
  const format = name === "none" ? undefined : lookup(name);
  return { name: format?.name ?? name, format, source, ...(pattern !== undefined ? { pattern } : {}) };
}

function choose<F extends { name: string }>(
  configured: string | undefined,
  modelName: string,
  modelType: string | undefined,
  patterns: readonly (readonly [string, string])[],
  byType: Readonly<Record<string, string>>,
  lookup: (name: string) => F | undefined,
): ParserChoice<F> {
  if (configured !== undefined) return named(configured, lookup, "config");
  const hit = longestMatch(modelName, patterns);
  if (hit) return named(hit[1], lookup, "model name", hit[0]);
  const typed = modelType ? byType[modelType.toLowerCase()] : undefined;
  if (typed) return named(typed, lookup, "model type");
  return { name: "none", format: undefined, source: "none" };
}

/** The tool and reasoning parsers for a model: `modelName` is the served name (the config's
 *  model key), `modelType` GetModelInfo's model_type when known. */
export function resolveParsers(modelName: string, modelType: string | undefined, config: ParserConfig): ResolvedParsers {
  return {
    tool: choose(config.tool_parser, modelName, modelType, TOOL_PARSER_PATTERNS, TOOL_PARSER_BY_MODEL_TYPE, toolFormat),
    reasoning: choose(config.reasoning_parser, modelName, modelType, REASONING_PARSER_PATTERNS, REASONING_PARSER_BY_MODEL_TYPE, reasoningFormat),
  };
}
