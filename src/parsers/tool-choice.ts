// `tools` and `tool_choice` -> what the engine request carries and how its output is read, as
// the upstream gateway does (smg crates/tool_parser/src/factory.rs generate_tool_constraint
// and build_required_array_schema; crates/grpc_client/src/vllm_engine.rs
// build_constraint_for_chat; crates/protocols/src/chat.rs validation):
//   "none"                  no constraint, no call parsing
//   "auto" (default)        no constraint, the model's tool format is parsed
//   {function: {name}}      json_schema = that function's parameters; the output is its arguments
//   "required"              json_schema = an array of {name, parameters}, at least one item
//                           (at most one when parallel_tool_calls is false)
//   {allowed_tools: {mode, tools}}  the named subset, then "auto" or "required" over it
// Errors name the request field (a 400 with `param`).
import type { SamplingParams } from "../gen/vllm_engine_pb.js";
import type { ConstrainedOutput } from "./constrained.js";
import type { ToolSpec } from "./types.js";

export type Constraint = SamplingParams["constraint"];

export class ToolRequestError extends Error {
  override readonly name = "ToolRequestError";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export interface ToolChoicePlan {
  /** "none": replies are not parsed for calls; "auto": by the model's tool format;
   *  "named" / "required": the engine is constrained and `output` says how to read it. */
  mode: "none" | "auto" | "named" | "required";
  /** The tools a reply may call (allowed_tools and a named function narrow them). */
  tools: ToolSpec[];
  /** For SamplingParams.constraint; `{ case: undefined }` when none. */
  constraint: Constraint;
  /** How to read constrained output (OutputParserOptions.constrained). */
  output?: ConstrainedOutput;
  parallelToolCalls: boolean;
}

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const DEFAULT_PARAMETERS = { type: "object", properties: {} };

/** `tools` as ToolSpecs (undefined when absent); only function tools, each named once. */
export function readTools(body: Body): ToolSpec[] | undefined {
  const tools = body.tools;
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new ToolRequestError("tools", "must be an array");
  const seen = new Map<string, number>();
  return tools.map((tool: unknown, i) => {
    if (!isObject(tool)) throw new ToolRequestError(`tools[${i}]`, "must be an object");
    if (tool.type !== "function") throw new ToolRequestError(`tools[${i}].type`, 'must be "function"');
    const fn = tool.function;
    if (!isObject(fn)) throw new ToolRequestError(`tools[${i}].function`, "must be an object");
    if (typeof fn.name !== "string" || fn.name === "") throw new ToolRequestError(`tools[${i}].function.name`, "must be a non-empty string");
    if (seen.has(fn.name)) throw new ToolRequestError(`tools[${i}].function.name`, `"${fn.name}" is already tools[${seen.get(fn.name)}]`);
    seen.set(fn.name, i);
    const params = fn.parameters;
    if (params !== undefined && params !== null && !isObject(params)) throw new ToolRequestError(`tools[${i}].function.parameters`, "must be a JSON Schema object");
    return isObject(params) ? { name: fn.name, parameters: params } : { name: fn.name };
  });
}

function pick(tools: ToolSpec[], name: unknown, field: string): ToolSpec {
  if (typeof name !== "string") throw new ToolRequestError(field, "must be a string");
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new ToolRequestError(field, `"${name}" is not among tools (${tools.map((t) => t.name).join(", ")})`);
  return tool;
}

/** allowed_tools, in the Chat Completions shape ({type, allowed_tools: {mode, tools}}) or
 *  the flat one smg and the Responses API use ({type, mode, tools}). */
function allowedTools(choice: Record<string, unknown>, tools: ToolSpec[]): { mode: "auto" | "required"; tools: ToolSpec[] } {
  const nested = isObject(choice.allowed_tools);
  const spec = nested ? (choice.allowed_tools as Record<string, unknown>) : choice;
  const base = nested ? "tool_choice.allowed_tools" : "tool_choice";
  if (spec.mode !== "auto" && spec.mode !== "required") throw new ToolRequestError(`${base}.mode`, 'must be "auto" or "required"');
  if (!Array.isArray(spec.tools)) throw new ToolRequestError(`${base}.tools`, "must be an array");
  const picked = spec.tools.map((ref: unknown, i) => {
    const at = `${base}.tools[${i}]`;
    if (!isObject(ref) || ref.type !== "function") throw new ToolRequestError(`${at}.type`, 'must be "function"');
    const fn = isObject(ref.function) ? ref.function.name : ref.name;
    return pick(tools, fn, isObject(ref.function) ? `${at}.function.name` : `${at}.name`);
  });
  return { mode: spec.mode, tools: tools.filter((t) => picked.includes(t)) };
}

/** The `required` schema: an array of {name, parameters} over `tools`, their `$defs` hoisted
 *  to the top so `#/$defs/...` references resolve (one name, one definition). */
export function requiredArraySchema(tools: ToolSpec[], parallel: boolean): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (const t of tools) {
    const own = t.parameters?.$defs;
    if (!isObject(own)) continue;
    for (const [name, def] of Object.entries(own)) {
      if (name in defs && JSON.stringify(defs[name]) !== JSON.stringify(def)) {
        throw new ToolRequestError("tools", `$defs "${name}" is defined differently by two tools`);
      }
      defs[name] = def;
    }
  }
  const anyOf = tools.map((t) => ({
    properties: { name: { type: "string", enum: [t.name] }, parameters: t.parameters ?? DEFAULT_PARAMETERS },
    required: ["name", "parameters"],
  }));
  return {
    type: "array",
    minItems: 1,
    ...(parallel ? {} : { maxItems: 1 }),
    items: { type: "object", anyOf },
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}

/** What a request's tools and tool_choice ask of the engine and of the output parser. */
export function planToolChoice(body: Body): ToolChoicePlan {
  const tools = readTools(body) ?? [];
  const ptc = body.parallel_tool_calls;
  if (ptc !== undefined && ptc !== null && typeof ptc !== "boolean") throw new ToolRequestError("parallel_tool_calls", "must be a boolean");
  const parallelToolCalls = ptc !== false;
  const none: ToolChoicePlan = { mode: "none", tools: [], constraint: { case: undefined }, parallelToolCalls };
  const choice = body.tool_choice ?? (tools.length > 0 ? "auto" : "none");
  if (choice === "none") return none;
  if (tools.length === 0) throw new ToolRequestError("tool_choice", "is only allowed when tools are given");
  const auto = (ts: ToolSpec[]): ToolChoicePlan => ({ mode: "auto", tools: ts, constraint: { case: undefined }, parallelToolCalls });
  const required = (ts: ToolSpec[]): ToolChoicePlan => ({
    mode: "required",
    tools: ts,
    constraint: { case: "jsonSchema", value: JSON.stringify(requiredArraySchema(ts, parallelToolCalls)) },
    output: { kind: "array" },
    parallelToolCalls,
  });
  if (choice === "auto") return auto(tools);
  if (choice === "required") return required(tools);
  if (!isObject(choice)) throw new ToolRequestError("tool_choice", 'must be "none", "auto", "required" or an object');
  if (choice.type === "function") {
    if (!isObject(choice.function)) throw new ToolRequestError("tool_choice.function", "must be an object");
    const tool = pick(tools, choice.function.name, "tool_choice.function.name");
    return {
      mode: "named",
      tools: [tool],
      constraint: { case: "jsonSchema", value: JSON.stringify(tool.parameters ?? DEFAULT_PARAMETERS) },
      output: { kind: "named", name: tool.name },
      parallelToolCalls,
    };
  }
  if (choice.type === "allowed_tools") {
    const allowed = allowedTools(choice, tools);
    return allowed.mode === "auto" ? auto(allowed.tools) : required(allowed.tools);
  }
  throw new ToolRequestError("tool_choice.type", 'must be "function" or "allowed_tools"');
}

/** A tool constraint and another one (response_format, structured outputs) on one request:
 *  the tool constraint wins, as the upstream gateway's build_constraint_for_chat and vLLM's
 *  HTTP server do. */
export function combineConstraints(tool: Constraint, other: Constraint): Constraint {
  return tool.case !== undefined ? tool : other;
}
