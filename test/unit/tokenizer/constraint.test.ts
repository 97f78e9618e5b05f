// Structured outputs -> the proto's one constraint: each form, and two at once refused naming both.
import { describe, expect, it } from "vitest";
import { SamplingParamError } from "../../../src/tokenizer/errors.js";
import { constraintOf } from "../../../src/tokenizer/constraint.js";
import { samplingPlan } from "../../../src/tokenizer/sampling.js";

const SCHEMA = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };

describe("each form maps onto the constraint oneof", () => {
  const table: [string, Record<string, unknown>, unknown][] = [
    ["response_format text: none", { response_format: { type: "text" } }, { case: undefined }],
    ["response_format json_object", { response_format: { type: "json_object" } }, { case: "jsonObject", value: true }],
    ["response_format json_schema", { response_format: { type: "json_schema", json_schema: { name: "x", schema: SCHEMA, strict: true } } }, { case: "jsonSchema", value: JSON.stringify(SCHEMA) }],
    ["response_format structural_tag: the object's JSON, as vLLM", { response_format: { type: "structural_tag", format: { type: "const_string", value: "x" } } }, { case: "structuralTag", value: '{"type":"structural_tag","format":{"type":"const_string","value":"x"}}' }],
    ["structured_outputs.json (object)", { structured_outputs: { json: SCHEMA } }, { case: "jsonSchema", value: JSON.stringify(SCHEMA) }],
    ["structured_outputs.json (text)", { structured_outputs: { json: '{"type":"string"}' } }, { case: "jsonSchema", value: '{"type":"string"}' }],
    ["structured_outputs.regex", { structured_outputs: { regex: "[a-z]+" } }, { case: "regex", value: "[a-z]+" }],
    ["structured_outputs.choice", { structured_outputs: { choice: ["yes", "no"] } }, { case: "choice", value: { choices: ["yes", "no"] } }],
    ["structured_outputs.grammar", { structured_outputs: { grammar: 'root ::= "a"' } }, { case: "grammar", value: 'root ::= "a"' }],
    ["structured_outputs.json_object", { structured_outputs: { json_object: true } }, { case: "jsonObject", value: true }],
    ["structured_outputs.json_object false: none", { structured_outputs: { json_object: false } }, { case: undefined }],
    ["structured_outputs.structural_tag", { structured_outputs: { structural_tag: '{"a":1}' } }, { case: "structuralTag", value: '{"a":1}' }],
    ["guided_json", { guided_json: SCHEMA }, { case: "jsonSchema", value: JSON.stringify(SCHEMA) }],
    ["guided_regex", { guided_regex: "\\d+" }, { case: "regex", value: "\\d+" }],
    ["guided_choice", { guided_choice: ["a"] }, { case: "choice", value: { choices: ["a"] } }],
    ["guided_grammar", { guided_grammar: "g" }, { case: "grammar", value: "g" }],
    ["nothing", {}, { case: undefined }],
  ];
  for (const [name, body, want] of table) {
    it(name, () => {
      expect(constraintOf(body)).toMatchObject(want as object);
      expect(samplingPlan("chat", body).samplingParams.constraint).toMatchObject(want as object);
    });
  }
});

function errorOf(body: Record<string, unknown>): SamplingParamError {
  try {
    constraintOf(body);
  } catch (err) {
    if (err instanceof SamplingParamError) return err;
    throw err;
  }
  throw new Error("no error");
}

describe("two constraints: a 400 naming both", () => {
  const table: [Record<string, unknown>, string, string][] = [
    [{ response_format: { type: "json_object" }, structured_outputs: { regex: "a" } }, "response_format", "structured_outputs.regex"],
    [{ response_format: { type: "json_schema", json_schema: { name: "x", schema: SCHEMA } }, structured_outputs: { json: SCHEMA } }, "response_format", "structured_outputs.json"],
    [{ structured_outputs: { json: SCHEMA, choice: ["a"] } }, "structured_outputs.json", "structured_outputs.choice"],
    [{ structured_outputs: { regex: "a" }, guided_regex: "b" }, "structured_outputs.regex", "guided_regex"],
    [{ response_format: { type: "json_object" }, guided_json: SCHEMA }, "response_format", "guided_json"],
    [{ guided_json: SCHEMA, guided_choice: ["a"] }, "guided_json", "guided_choice"],
  ];
  for (const [body, first, second] of table) {
    it(`${first} + ${second}`, () => {
      const e = errorOf(body);
      expect(e.field).toBe(second);
      expect(e.message).toContain(first);
      expect(e.message).toContain(second);
    });
  }
  it("a text response_format is no constraint and combines with one", () => {
    expect(constraintOf({ response_format: { type: "text" }, structured_outputs: { regex: "a" } })).toMatchObject({ case: "regex" });
  });
});

describe("malformed forms name the field", () => {
  const table: [Record<string, unknown>, string][] = [
    [{ response_format: "json" }, "response_format"],
    [{ response_format: { type: "xml" } }, "response_format.type"],
    [{ response_format: { type: "json_schema" } }, "response_format.json_schema"],
    [{ response_format: { type: "json_schema", json_schema: { name: "x" } } }, "response_format.json_schema.schema"],
    [{ structured_outputs: [] }, "structured_outputs"],
    [{ structured_outputs: { json: "{not json" } }, "structured_outputs.json"],
    [{ structured_outputs: { choice: [] } }, "structured_outputs.choice"],
    [{ structured_outputs: { regex: 5 } }, "structured_outputs.regex"],
    [{ structured_outputs: { json_object: "yes" } }, "structured_outputs.json_object"],
    [{ guided_choice: [1] }, "guided_choice"],
    [{ guided_json: 3 }, "guided_json"],
  ];
  for (const [body, field] of table) {
    it(field, () => expect(errorOf(body).field).toBe(field));
  }
});
