// The sim's structured outputs: the reply it builds satisfies the constraint.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ChoiceConstraintSchema } from "../../../src/gen/vllm_engine_pb.js";
import { constrainedText, sampleRegex } from "../../../sim/constraint.js";

describe("sampleRegex: a string the pattern matches", () => {
  const patterns = ["abc", "[a-z]+", "\\d{3}-\\d{4}", "(yes|no)", "(?:red|green) (cat|dog)s?", "[A-Z][a-z]*\\.", "x{2,5}y?", "^\\w+@\\w+\\.com$", "[^0-9]+", "a.c", "(ab)+c{0,1}"];
  for (const p of patterns) {
    it(p, () => expect(sampleRegex(p)).toMatch(new RegExp(`^(?:${p})$`)));
  }
});

describe("constrainedText", () => {
  it("json_object: a JSON object", () => {
    const t = constrainedText({ case: "jsonObject", value: true }, 0)!;
    expect(typeof JSON.parse(t)).toBe("object");
  });
  it("json_schema: a value with every property, of the schema's types", () => {
    const schema = { type: "object", properties: { name: { type: "string", minLength: 5 }, age: { type: "integer", minimum: 3 }, tags: { type: "array", items: { enum: ["a", "b"] } }, ok: { type: "boolean" }, kind: { const: "k" } }, required: ["name"] };
    expect(JSON.parse(constrainedText({ case: "jsonSchema", value: JSON.stringify(schema) }, 0)!)).toEqual({ name: "simmm", age: 3, tags: ["a"], ok: true, kind: "k" });
  });
  it("choice: one of the choices, by the pick", () => {
    const c = { case: "choice" as const, value: create(ChoiceConstraintSchema, { choices: ["x", "y", "z"] }) };
    expect(constrainedText(c, 4)).toBe("y");
  });
  it("grammar is not modelled", () => {
    expect(constrainedText({ case: "grammar", value: "root ::= \"a\"" }, 0)).toBeUndefined();
  });
});
