// How one chat request's replies are read, decided once from the request and the model's
// parsers (resolve.ts): which tool format and reasoning format run, what tool_choice asks of
// the engine (a constraint), whether reasoning reaches the client, and which special tokens
// detokenization must keep for the formats to see their markers. Pure; every surface that
// reaches a VllmEngine chat reply (chat completions, Responses and Messages over chat) uses it.
import type { OutputParserOptions } from "./output-parser.js";
import type { ResolvedParsers } from "./resolve.js";
import { planToolChoice, ToolRequestError, type Constraint, type ToolChoicePlan } from "./tool-choice.js";

export interface OutputPlan {
  /** For a new OutputParser per choice; undefined: replies are plain content. */
  parser: OutputParserOptions | undefined;
  /** tool_choice's mode (finish_reason depends on it). */
  toolMode: ToolChoicePlan["mode"];
  /** The tool constraint for SamplingParams (case undefined: none). */
  constraint: Constraint;
  /** include_reasoning (default true): false drops the reasoning text. */
  includeReasoning: boolean;
  /** Marker tokens the tool format needs in the text (kept when special tokens are skipped). */
  keepSpecialTokens: readonly string[];
}

type Body = Record<string, unknown>;

/** The request's thinking switch: chat_template_kwargs.enable_thinking (or `thinking`), when set. */
export function thinkingOf(body: Body): boolean | undefined {
  const kwargs = body.chat_template_kwargs;
  if (typeof kwargs !== "object" || kwargs === null) return undefined;
  const k = kwargs as Body;
  const v = k.enable_thinking ?? k.thinking;
  return typeof v === "boolean" ? v : undefined;
}

function includeReasoningOf(body: Body): boolean {
  const v = body.include_reasoning;
  if (v === undefined || v === null) return true;
  if (typeof v !== "boolean") throw new ToolRequestError("include_reasoning", "must be a boolean");
  return v;
}

/** The plan for a chat request; throws ToolRequestError naming the field (a 400). */
export function planOutput(body: Body, parsers: ResolvedParsers): OutputPlan {
  const tools = planToolChoice(body);
  const toolFormat = tools.mode === "auto" ? parsers.tool.format : undefined;
  if (tools.mode === "auto" && !toolFormat) {
    // vLLM answers the same 400 without --tool-call-parser: "auto" needs a parser to read calls.
    const field = body.tool_choice === undefined ? "tools" : "tool_choice";
    throw new ToolRequestError(field, `"auto" tool choice needs a tool parser, and this model has none (${parsers.tool.name}); set models.<model>.tool_parser, or use tool_choice "required" or a named function`);
  }
  const reasoning = parsers.reasoning.format;
  const includeReasoning = includeReasoningOf(body);
  const constrained = tools.output;
  const needsParser = toolFormat !== undefined || reasoning !== undefined || constrained !== undefined;
  const parser: OutputParserOptions | undefined = needsParser
    ? {
        ...(toolFormat ? { toolFormat, tools: tools.tools } : {}),
        ...(reasoning ? { reasoning } : {}),
        ...(thinkingOf(body) !== undefined ? { thinking: thinkingOf(body) } : {}),
        parallelToolCalls: tools.parallelToolCalls,
        ...(constrained ? { constrained } : {}),
      }
    : undefined;
  return { parser, toolMode: tools.mode, constraint: tools.constraint, includeReasoning, keepSpecialTokens: toolFormat?.specialTokens ?? [] };
}

/** The choice's finish_reason, as vLLM's chat server gives it: "tool_calls" when calls were
 *  read by the tool format ("auto") or under "required" from an engine that stopped on its
 *  own; a named function's reply keeps the engine's reason. */
export function finishReasonOf(engineReason: string, toolMode: ToolChoicePlan["mode"], calls: number): string {
  if (calls === 0) return engineReason;
  if (toolMode === "auto") return "tool_calls";
  if (toolMode === "required" && engineReason === "stop") return "tool_calls";
  return engineReason;
}
