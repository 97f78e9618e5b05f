// Structured outputs: the request fields that constrain the output -> the proto's
// SamplingParams `constraint` oneof, which holds one. OpenAI's `response_format`
// (json_object, json_schema; vLLM's structural_tag), vLLM's `structured_outputs` (json, regex,
// choice, grammar, json_object, structural_tag: vLLM's StructuredOutputsParams) and its older
// `guided_*` fields. A request that asks for two constraints is refused naming both (vLLM's
// StructuredOutputsParams refuses two kinds too; where vLLM lets response_format replace the
// same kind in structured_outputs, the gateway refuses as well: one rule, no silent winner).
// A tool_choice constraint (issue 28) meeting any of these follows the same rule.
import { create } from "@bufbuild/protobuf";
import { ChoiceConstraintSchema, type SamplingParams } from "../gen/vllm_engine_pb.js";
import { SamplingParamError } from "./errors.js";

export type Constraint = SamplingParams["constraint"];

type Body = Record<string, unknown>;

const isObject = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);

function text(field: string, v: unknown): string {
  if (typeof v !== "string") throw new SamplingParamError(field, "must be a string");
  return v;
}

/** A JSON Schema sent as an object or as its JSON text (vLLM takes both). */
function schemaText(field: string, v: unknown): string {
  if (isObject(v)) return JSON.stringify(v);
  if (typeof v === "string") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      throw new SamplingParamError(field, "must be a JSON Schema (an object, or its JSON text)");
    }
    if (!isObject(parsed)) throw new SamplingParamError(field, "must be a JSON Schema object");
    return v;
  }
  throw new SamplingParamError(field, "must be a JSON Schema (an object, or its JSON text)");
}

function choice(field: string, v: unknown): Constraint {
  if (!Array.isArray(v) || v.length === 0 || !v.every((c) => typeof c === "string")) throw new SamplingParamError(field, "must be a non-empty array of strings");
  return { case: "choice", value: create(ChoiceConstraintSchema, { choices: v as string[] }) };
}

function responseFormat(rf: unknown): Constraint {
  if (!isObject(rf)) throw new SamplingParamError("response_format", "must be an object");
  switch (rf.type) {
    case "text":
      return { case: undefined };
    case "json_object":
      return { case: "jsonObject", value: true };
    case "json_schema": {
      const js = rf.json_schema;
      if (!isObject(js)) throw new SamplingParamError("response_format.json_schema", "is required when type is json_schema");
      if (!isObject(js.schema)) throw new SamplingParamError("response_format.json_schema.schema", "must be a JSON Schema object");
      return { case: "jsonSchema", value: JSON.stringify(js.schema) };
    }
    case "structural_tag":
      // vLLM sends the whole response_format object as the tag's JSON.
      return { case: "structuralTag", value: JSON.stringify(rf) };
    default:
      throw new SamplingParamError("response_format.type", "must be one of text, json_object, json_schema, structural_tag");
  }
}

const STRUCTURED: readonly [string, (field: string, v: unknown) => Constraint][] = [
  ["json", (f, v) => ({ case: "jsonSchema", value: schemaText(f, v) })],
  ["regex", (f, v) => ({ case: "regex", value: text(f, v) })],
  ["choice", choice],
  ["grammar", (f, v) => ({ case: "grammar", value: text(f, v) })],
  ["json_object", (f, v) => {
    if (typeof v !== "boolean") throw new SamplingParamError(f, "must be a boolean");
    return v ? { case: "jsonObject", value: true } : { case: undefined };
  }],
  ["structural_tag", (f, v) => ({ case: "structuralTag", value: text(f, v) })],
];

const GUIDED: readonly [string, (field: string, v: unknown) => Constraint][] = [
  ["guided_json", (f, v) => ({ case: "jsonSchema", value: schemaText(f, v) })],
  ["guided_regex", (f, v) => ({ case: "regex", value: text(f, v) })],
  ["guided_choice", choice],
  ["guided_grammar", (f, v) => ({ case: "grammar", value: text(f, v) })],
];

/** Every constraint the body asks for, each with the field it came in. */
function requestedConstraints(body: Body): [field: string, constraint: Constraint][] {
  const found: [string, Constraint][] = [];
  const add = (field: string, c: Constraint) => {
    if (c.case !== undefined) found.push([field, c]);
  };
  if (body.response_format !== undefined && body.response_format !== null) add("response_format", responseFormat(body.response_format));
  const so = body.structured_outputs;
  if (so !== undefined && so !== null) {
    if (!isObject(so)) throw new SamplingParamError("structured_outputs", "must be an object");
    for (const [key, make] of STRUCTURED) {
      const v = so[key];
      if (v !== undefined && v !== null) add(`structured_outputs.${key}`, make(`structured_outputs.${key}`, v));
    }
  }
  for (const [field, make] of GUIDED) {
    const v = body[field];
    if (v !== undefined && v !== null) add(field, make(field, v));
  }
  return found;
}

/** The one constraint for SamplingParams, or a 400 naming both fields when there are two. */
export function constraintOf(body: Body): Constraint {
  const found = requestedConstraints(body);
  if (found.length > 1) {
    const [a, b] = [found[0]![0], found[1]![0]];
    throw new SamplingParamError(b, `${a} and ${b} each constrain the output; a request may carry one constraint`);
  }
  return found[0]?.[1] ?? { case: undefined };
}
