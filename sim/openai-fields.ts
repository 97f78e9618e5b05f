// The vLLM OpenAI request fields that shape a reply rather than its sampling: logprobs,
// include_stop_str_in_output, tools / tool_choice, response_format / structured_outputs and the
// reasoning switches. Checks and messages follow vLLM's chat_completion/protocol.py validators
// (check_logprobs, check_tool_usage, check_structured_outputs_count) and serving.py's refusal
// of "auto" without --enable-auto-tool-choice.
import { create } from "@bufbuild/protobuf";
import { ChoiceConstraintSchema, type SamplingParams } from "../src/gen/vllm_engine_pb.js";
import { bad, isObject, optBool, OpenAiBadRequest, type Body } from "./body-fields.js";
import type { EngineConfig } from "./spec.js";

export type Constraint = SamplingParams["constraint"];
export type ToolChoice = "none" | "auto" | "required" | { name: string };

export interface ToolDef {
  name: string;
  parameters: Record<string, unknown> | undefined;
}

export interface ReplyFields {
  /** Top-k alternatives per token when logprobs were asked for, else undefined. */
  logprobs: number | undefined;
  includeStopStr: boolean;
  tools: ToolDef[] | undefined;
  toolChoice: ToolChoice;
  /** The structured-output constraint the reply must satisfy, if any. */
  constraint: Constraint | undefined;
  /** chat_template_kwargs.enable_thinking (Qwen3's switch; default true). */
  enableThinking: boolean;
  includeReasoning: boolean;
}

/** vLLM's default --max-logprobs. */
export const MAX_LOGPROBS = 20;

function logprobsOf(route: string, body: Body): number | undefined {
  if (route === "/v1/completions") {
    const v = body.logprobs;
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v)) bad("logprobs", "must be an integer");
    return checkMax(v, "logprobs");
  }
  const on = optBool(body, "logprobs") ?? false;
  const top = body.top_logprobs;
  if (top !== undefined && top !== null) {
    if (typeof top !== "number" || !Number.isInteger(top)) throw new OpenAiBadRequest("`top_logprobs` must be an integer.", "top_logprobs");
    if (top < 0 && top !== -1) throw new OpenAiBadRequest("`top_logprobs` must be a positive value or -1.", "top_logprobs");
    if (top !== 0 && !on) throw new OpenAiBadRequest("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
  }
  return on ? checkMax((top as number | null | undefined) ?? 0, "top_logprobs") : undefined;
}

/** The engine's own cap (SamplingParams validation): -1 asks for the whole vocabulary. */
function checkMax(k: number, field: string): number {
  if (k < -1) throw new OpenAiBadRequest(`${field} must be non-negative, got ${k}.`, field);
  if (k === -1 || k > MAX_LOGPROBS) throw new OpenAiBadRequest(`Requested sample logprobs of ${k === -1 ? "the full vocabulary" : k}, which is greater than max allowed: ${MAX_LOGPROBS}`, field);
  return k;
}

function toolsOf(body: Body): ToolDef[] | undefined {
  const t = body.tools;
  if (t === undefined || t === null) return undefined;
  if (!Array.isArray(t)) bad("tools", "must be an array");
  if (t.length === 0) throw new OpenAiBadRequest("`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.", "tools");
  return t.map((tool, i) => {
    const fn = isObject(tool) ? tool.function : undefined;
    if (!isObject(fn) || typeof fn.name !== "string") bad(`tools[${i}].function.name`, "must be a string");
    if (fn.parameters !== undefined && fn.parameters !== null && !isObject(fn.parameters)) bad(`tools[${i}].function.parameters`, "must be an object");
    return { name: fn.name, parameters: (fn.parameters ?? undefined) as Record<string, unknown> | undefined };
  });
}

function toolChoiceOf(body: Body, tools: ToolDef[] | undefined): ToolChoice {
  // check_tool_usage: tools without tool_choice default to "auto"; none otherwise.
  if (!("tool_choice" in body)) return tools ? "auto" : "none";
  const c = body.tool_choice;
  if (c === null || c === "none") return "none";
  if (!tools) throw new OpenAiBadRequest("When using `tool_choice`, `tools` must be set.", "tool_choice");
  if (c === "auto" || c === "required") return c;
  if (!isObject(c)) throw new OpenAiBadRequest(`Invalid value for \`tool_choice\`: ${String(c)}! Only named tools, "none", "auto" or "required" are supported.`, "tool_choice");
  const usage = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';
  if (!isObject(c.function)) throw new OpenAiBadRequest(`Invalid value for \`function\`: \`${String(c.function)}\` in \`tool_choice\`! ${usage}`, "tool_choice.function");
  const name = c.function.name;
  if (typeof name !== "string" || name === "") throw new OpenAiBadRequest(`Invalid \`name\` in \`function\`: \`${String(name)}\` in \`tool_choice\`! ${usage}`, "tool_choice.function.name");
  if (!tools.some((t) => t.name === name)) throw new OpenAiBadRequest("The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice");
  return { name };
}

/** A JSON schema given as an object or as its JSON text. */
function schemaText(v: unknown): string {
  if (isObject(v)) return JSON.stringify(v);
  if (typeof v === "string") {
    try {
      if (isObject(JSON.parse(v))) return v;
    } catch {
      // falls through to the 400
    }
  }
  bad("structured_outputs.json", "must be a JSON schema (an object or its JSON text)");
}

/** structured_outputs, else response_format (protocol.py's structured_outputs_from_response_format). */
function constraintOf(body: Body): Constraint | undefined {
  const so = body.structured_outputs;
  if (so !== undefined && so !== null) {
    if (!isObject(so)) bad("structured_outputs", "must be an object");
    const kinds = ["json", "regex", "choice"].filter((k) => so[k] !== undefined && so[k] !== null);
    if (kinds.length > 1) throw new OpenAiBadRequest("You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').", null);
    if (isObject(body.tool_choice) && kinds.length > 0) throw new OpenAiBadRequest("You can only either use constraints for structured outputs or tools, not both.", null);
    if (so.json !== undefined && so.json !== null) return { case: "jsonSchema", value: schemaText(so.json) };
    if (typeof so.regex === "string") return { case: "regex", value: so.regex };
    if (Array.isArray(so.choice)) return { case: "choice", value: create(ChoiceConstraintSchema, { choices: so.choice.map(String) }) };
    if (so.json_object === true) return { case: "jsonObject", value: true };
    if (typeof so.grammar === "string") return { case: "grammar", value: so.grammar };
    return undefined;
  }
  const rf = body.response_format;
  if (rf === undefined || rf === null) return undefined;
  if (!isObject(rf) || typeof rf.type !== "string") bad("response_format", "must be an object with a type");
  if (rf.type === "text") return undefined;
  if (rf.type === "json_object") return { case: "jsonObject", value: true };
  if (rf.type === "json_schema") {
    const js = rf.json_schema;
    if (!isObject(js)) throw new OpenAiBadRequest("When response_format type is 'json_schema', the 'json_schema' field must be provided.", "response_format");
    if (js.schema !== undefined && js.schema !== null && !isObject(js.schema)) bad("response_format.json_schema.schema", "must be an object");
    return { case: "jsonSchema", value: JSON.stringify(js.schema ?? {}) };
  }
  if (rf.type === "structural_tag") return { case: "structuralTag", value: JSON.stringify(rf) };
  bad("response_format.type", "must be one of text, json_object, json_schema, structural_tag");
}

/** The schema a required tool choice constrains output to (protocol.py's
 *  _get_json_schema_from_tool): a non-empty array of {name, parameters}, one branch per tool. */
export function requiredToolsSchema(tools: ToolDef[]): Record<string, unknown> {
  return {
    type: "array",
    minItems: 1,
    items: {
      type: "object",
      anyOf: tools.map((t) => ({
        properties: { name: { type: "string", enum: [t.name] }, parameters: t.parameters ?? { type: "object", properties: {} } },
        required: ["name", "parameters"],
      })),
    },
  };
}

/** `autoNeedsParser`: "auto" without the engine's tool parser is chat's 400; the Responses
 *  API has no such refusal (it answers in text). */
export function parseReplyFields(route: string, body: Body, cfg: EngineConfig, autoNeedsParser = true): ReplyFields {
  const chat = route === "/v1/chat/completions";
  const tools = chat ? toolsOf(body) : undefined;
  const toolChoice = chat ? toolChoiceOf(body, tools) : "none";
  let constraint = constraintOf(body);
  if (autoNeedsParser && toolChoice === "auto" && !(cfg.enableAutoToolChoice && cfg.toolCallParser)) {
    // serving.py answers this with a plain 400 (no param).
    throw new OpenAiBadRequest('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', null);
  }
  // Named and required tool choices are structured outputs: the tool's parameters, or the array.
  if (typeof toolChoice === "object") {
    const tool = tools!.find((t) => t.name === toolChoice.name)!;
    constraint = { case: "jsonSchema", value: JSON.stringify(tool.parameters ?? { type: "object", properties: {} }) };
  } else if (toolChoice === "required") {
    constraint = { case: "jsonSchema", value: JSON.stringify(requiredToolsSchema(tools!)) };
  }
  const kwargs = body.chat_template_kwargs;
  if (kwargs !== undefined && kwargs !== null && !isObject(kwargs)) bad("chat_template_kwargs", "must be an object");
  return {
    logprobs: logprobsOf(route, body),
    includeStopStr: optBool(body, "include_stop_str_in_output") ?? false,
    tools,
    toolChoice,
    constraint,
    enableThinking: !(isObject(kwargs) && kwargs.enable_thinking === false),
    includeReasoning: optBool(body, "include_reasoning") ?? true,
  };
}
