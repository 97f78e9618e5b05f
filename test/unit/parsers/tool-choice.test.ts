// tools + tool_choice -> the engine constraint and how the output is read (smg's
// generate_tool_constraint / build_required_array_schema / parse_json_schema_response), and
// the 4xx field names for bad input.
import { describe, expect, it } from "vitest";
import { hermes } from "../../../src/parsers/formats/hermes.js";
import { combineConstraints, planToolChoice, ToolRequestError } from "../../../src/parsers/tool-choice.js";
import { prng, randomChunks, singleChars, streamDeltas, streamed, whole } from "./run-parser.js";

const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };
const time = { type: "function", function: { name: "get_time" } };
const tools = [weather, time];
const noParams = { type: "object", properties: {} };

describe("planToolChoice", () => {
  it("no tools, or tool_choice none: no constraint, no parsing", () => {
    expect(planToolChoice({})).toEqual({ mode: "none", tools: [], constraint: { case: undefined }, parallelToolCalls: true });
    expect(planToolChoice({ tools, tool_choice: "none" }).mode).toBe("none");
  });
  it("tools without tool_choice, or auto: the format parser over all tools, no constraint", () => {
    for (const body of [{ tools }, { tools, tool_choice: "auto" }]) {
      const plan = planToolChoice(body);
      expect(plan).toMatchObject({ mode: "auto", constraint: { case: undefined } });
      expect(plan.tools.map((t) => t.name)).toEqual(["get_weather", "get_time"]);
      expect(plan.output).toBeUndefined();
    }
  });
  it("a named function: its parameters as json_schema, output read as its arguments", () => {
    const plan = planToolChoice({ tools, tool_choice: { type: "function", function: { name: "get_weather" } } });
    expect(plan.mode).toBe("named");
    expect(plan.constraint).toEqual({ case: "jsonSchema", value: JSON.stringify(weather.function.parameters) });
    expect(plan.output).toEqual({ kind: "named", name: "get_weather" });
    const noSchema = planToolChoice({ tools, tool_choice: { type: "function", function: { name: "get_time" } } });
    expect(noSchema.constraint).toEqual({ case: "jsonSchema", value: JSON.stringify(noParams) });
  });
  it("required: an array of {name, parameters} with minItems 1; maxItems 1 without parallel calls", () => {
    const plan = planToolChoice({ tools, tool_choice: "required" });
    expect(plan.output).toEqual({ kind: "array" });
    const schema = JSON.parse(plan.constraint.value as string);
    expect(schema).toEqual({
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        anyOf: [
          { properties: { name: { type: "string", enum: ["get_weather"] }, parameters: weather.function.parameters }, required: ["name", "parameters"] },
          { properties: { name: { type: "string", enum: ["get_time"] }, parameters: noParams }, required: ["name", "parameters"] },
        ],
      },
    });
    const single = JSON.parse(planToolChoice({ tools, tool_choice: "required", parallel_tool_calls: false }).constraint.value as string);
    expect(single.maxItems).toBe(1);
  });
  it("required hoists the tools' $defs to the top; two different definitions of one name are refused", () => {
    const def = (n: string, t: string) => ({ type: "function", function: { name: n, parameters: { $defs: { Unit: { type: t } }, properties: { u: { $ref: "#/$defs/Unit" } } } } });
    const schema = JSON.parse(planToolChoice({ tools: [def("a", "string"), def("b", "string")], tool_choice: "required" }).constraint.value as string);
    expect(schema.$defs).toEqual({ Unit: { type: "string" } });
    expect(() => planToolChoice({ tools: [def("a", "string"), def("b", "integer")], tool_choice: "required" })).toThrow(/\$defs "Unit"/);
  });
  it("allowed_tools narrows the tools, then auto or required over them (both request shapes)", () => {
    const nested = planToolChoice({ tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "get_time" } }] } } });
    expect(nested.mode).toBe("required");
    expect(nested.tools.map((t) => t.name)).toEqual(["get_time"]);
    expect(JSON.parse(nested.constraint.value as string).items.anyOf).toHaveLength(1);
    const flat = planToolChoice({ tools, tool_choice: { type: "allowed_tools", mode: "auto", tools: [{ type: "function", name: "get_weather" }] } });
    expect(flat).toMatchObject({ mode: "auto", constraint: { case: undefined } });
    expect(flat.tools.map((t) => t.name)).toEqual(["get_weather"]);
  });

  const errors: [string, object, string][] = [
    ["tools not an array", { tools: {} }, "tools"],
    ["a tool of another type", { tools: [{ type: "code_interpreter" }] }, "tools[0].type"],
    ["a tool without a name", { tools: [{ type: "function", function: {} }] }, "tools[0].function.name"],
    ["a name twice", { tools: [weather, weather] }, "tools[1].function.name"],
    ["parameters not an object", { tools: [{ type: "function", function: { name: "f", parameters: "x" } }] }, "tools[0].function.parameters"],
    ["tool_choice without tools", { tool_choice: "required" }, "tool_choice"],
    ["an unknown string", { tools, tool_choice: "any" }, "tool_choice"],
    ["an unknown type", { tools, tool_choice: { type: "tool" } }, "tool_choice.type"],
    ["a named function not among tools", { tools, tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice.function.name"],
    ["a named function without a name", { tools, tool_choice: { type: "function", function: {} } }, "tool_choice.function.name"],
    ["allowed_tools with a bad mode", { tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "any", tools: [] } } }, "tool_choice.allowed_tools.mode"],
    ["allowed_tools naming an unknown tool", { tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [weather, { type: "function", function: { name: "x" } }] } } }, "tool_choice.allowed_tools.tools[1].function.name"],
    ["parallel_tool_calls not a boolean", { tools, parallel_tool_calls: "no" }, "parallel_tool_calls"],
  ];
  it.each(errors)("%s -> 4xx naming %s", (_, body, field) => {
    try {
      planToolChoice(body as Record<string, unknown>);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ToolRequestError);
      expect((err as ToolRequestError).field).toBe(field);
      expect((err as Error).message.startsWith(`${field}: `)).toBe(true);
    }
  });
});

it("a tool constraint wins over another constraint on the request", () => {
  const tool = { case: "jsonSchema", value: "{}" } as const;
  const other = { case: "regex", value: "a+" } as const;
  expect(combineConstraints(tool, other)).toBe(tool);
  expect(combineConstraints({ case: undefined }, other)).toBe(other);
});

describe("constrained output -> tool calls", () => {
  const run = (text: string, constrained: { kind: "named"; name: string } | { kind: "array" }, parallelToolCalls = true) => {
    const options = { constrained, parallelToolCalls, toolFormat: hermes };
    const got = whole(text, options);
    expect(streamed(singleChars(text), options)).toEqual(got);
    const random = prng(text.length);
    for (let i = 0; i < 10; i++) expect(streamed(randomChunks(text, random), options)).toEqual(got);
    return got;
  };
  it("named: the text is the arguments as written; streamed as fragments after the first delta", () => {
    const text = '{"city": "Paris"}';
    expect(run(text, { kind: "named", name: "get_weather" })).toEqual({ content: null, reasoning: null, toolCalls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: text } }] });
    const deltas = streamDeltas(['{"city"', ': "Paris"}'], { constrained: { kind: "named", name: "get_weather" } });
    expect(deltas[0]!.toolCalls).toEqual([
      { index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } },
      { index: 0, function: { arguments: '{"city"' } },
    ]);
    expect(deltas[1]!.toolCalls).toEqual([{ index: 0, function: { arguments: ': "Paris"}' } }]);
  });
  it("required: each array element a call, arguments = its parameters", () => {
    const out = run('[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "parameters": {}}]', { kind: "array" });
    expect(out.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual([["get_weather", '{"city":"Paris"}'], ["get_time", "{}"]]);
    expect(out.content).toBeNull();
  });
  it("required without parallel calls keeps one call", () => {
    expect(run('[{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]', { kind: "array" }, false).toolCalls).toHaveLength(1);
  });
  it("required cut short keeps the complete calls; with none the text is content", () => {
    expect(run('[{"name": "a", "parameters": {}}, {"name": "b", "param', { kind: "array" }).toolCalls.map((c) => c.function.name)).toEqual(["a"]);
    expect(run('[{"name": "a", "par', { kind: "array" })).toEqual({ content: '[{"name": "a", "par', reasoning: null, toolCalls: [] });
    expect(run('{"name": "a"}', { kind: "array" }).content).toBe('{"name": "a"}');
  });
});
