// Behaviour of the formats beyond the ported fixtures: markers split anywhere never leak into
// content, held tails are flushed, text around calls, Mistral's newer name[ARGS] form, the
// XML format's typed values, parallel_tool_calls, and reasoning before calls.
import { describe, expect, it } from "vitest";
import { deepseekV3 } from "../../../src/parsers/formats/deepseek-v3.js";
import { hermes } from "../../../src/parsers/formats/hermes.js";
import { llama3Json } from "../../../src/parsers/formats/llama3-json.js";
import { mistral } from "../../../src/parsers/formats/mistral.js";
import { pythonic } from "../../../src/parsers/formats/pythonic.js";
import { qwen3Coder } from "../../../src/parsers/formats/qwen3-coder.js";
import { deepseekR1Reasoning, qwen3Reasoning } from "../../../src/parsers/reasoning.js";
import { singleChars, streamDeltas, streamed, whole } from "./run-parser.js";

describe("streaming holds back what may be markup", () => {
  it("a partial <tool_call> is held, and sent as content once it cannot be one", () => {
    const deltas = streamDeltas(["Hello <tool", "_ca", "ll?"], { toolFormat: hermes });
    expect(deltas.map((d) => d.content)).toEqual(["Hello ", "", "<tool_call?", ""]);
  });
  it("a partial marker still held at the end is flushed as content", () => {
    expect(streamDeltas(["Hi <tool_ca"], { toolFormat: hermes }).map((d) => d.content)).toEqual(["Hi ", "<tool_ca"]);
  });
  it("no content delta holds markup when a call arrives one character at a time", () => {
    const text = 'Sure.<tool_call>{"name": "f", "arguments": {}}</tool_call>Done.';
    const contents = streamDeltas(singleChars(text), { toolFormat: hermes }).map((d) => d.content);
    expect(contents.join("")).toBe("Sure.Done.");
    expect(contents.filter((c) => c.includes("<"))).toEqual([]);
  });
  it("a call's deltas arrive once its closing tag does, and text after it streams on", () => {
    const deltas = streamDeltas(['<tool_call>{"name": "f", ', '"arguments": {"a": 1}}</tool_call>', "\n\nok"], { toolFormat: hermes, newCallId: () => "x" });
    expect(deltas[0]!.toolCalls).toEqual([]);
    expect(deltas[1]!.toolCalls).toEqual([
      { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } },
      { index: 0, function: { arguments: '{"a":1}' } },
    ]);
    expect(deltas[2]!.content).toBe("\n\nok");
  });
  it("a reply opening with JSON (Llama) is held to the end: trailing text makes it content", () => {
    const text = '{"name": "f", "parameters": {}} and more';
    expect(streamDeltas([text], { toolFormat: llama3Json })[0]!.content).toBe("");
    expect(whole(text, { toolFormat: llama3Json })).toEqual({ content: text, reasoning: null, toolCalls: [] });
  });
});

describe("formats", () => {
  it("hermes reads `parameters` when `arguments` is absent, and keeps big numbers exactly", () => {
    const out = whole('<tool_call>{"name": "f", "parameters": {"n": 12345678901234567890}}</tool_call>', { toolFormat: hermes });
    expect(out.toolCalls[0]!.function).toEqual({ name: "f", arguments: '{"n":12345678901234567890}' });
  });
  it("a malformed call among good ones stays text; the good ones are calls", () => {
    const out = whole('<tool_call>{"name": oops}</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>', { toolFormat: hermes });
    expect(out.content).toBe('<tool_call>{"name": oops}</tool_call>');
    expect(out.toolCalls.map((c) => c.function.name)).toEqual(["g"]);
  });
  it("mistral's [TOOL_CALLS]name[ARGS]{...} form, one per call", () => {
    const out = whole('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}', { toolFormat: mistral });
    expect(out.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual([["get_weather", '{"city":"Paris"}'], ["get_time", "{}"]]);
    expect(out.content).toBeNull();
  });
  it("qwen3_coder converts values by the declared parameter type", () => {
    const tools = [{ name: "f", parameters: { type: "object", properties: { id: { type: "string" }, n: { type: "integer" }, on: { type: "boolean" }, xs: { type: "array" } } } }];
    const text = "<tool_call>\n<function=f>\n<parameter=id>\n007\n</parameter>\n<parameter=n>0042</parameter>\n<parameter=on>True</parameter>\n<parameter=xs>[1, 2]</parameter>\n<parameter=other>None</parameter>\n</function>\n</tool_call>";
    expect(JSON.parse(whole(text, { toolFormat: qwen3Coder, tools }).toolCalls[0]!.function.arguments)).toEqual({ id: "007", n: 42, on: true, xs: [1, 2], other: null });
  });
  it("deepseek_v3 wraps arguments that are not an object", () => {
    const text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n[1]\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    expect(whole(text, { toolFormat: deepseekV3 }).toolCalls[0]!.function.arguments).toBe('{"value":[1]}');
  });
  it("pythonic leaves a plain list and an unclosed call list as text", () => {
    expect(whole("Pick from [1, 2, 3].", { toolFormat: pythonic }).content).toBe("Pick from [1, 2, 3].");
    expect(whole("[f(a=1", { toolFormat: pythonic }).content).toBe("[f(a=1");
  });
  it("pythonic reads Python literals: escapes, negative numbers, tuples, dict keys", () => {
    const out = whole(`[f(s='a\\'b\\n', n=-3, x=1.5e2, t=(1, 'x'), d={1: None})]`, { toolFormat: pythonic });
    expect(JSON.parse(out.toolCalls[0]!.function.arguments)).toEqual({ s: "a'b\n", n: -3, x: 150, t: [1, "x"], d: { "1": null } });
  });
});

describe("options", () => {
  const two = '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {}}</tool_call>';
  it("parallelToolCalls false keeps only the first call", () => {
    expect(whole(two, { toolFormat: hermes, parallelToolCalls: false }).toolCalls.map((c) => c.function.name)).toEqual(["a"]);
    expect(whole(two, { toolFormat: hermes }).toolCalls.map((c) => c.function.name)).toEqual(["a", "b"]);
  });
  it("calls are not parsed inside reasoning, and are after it", () => {
    const call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
    const out = whole(`maybe ${call}?</think>\n\n${call}`, { toolFormat: hermes, reasoning: deepseekR1Reasoning });
    expect(out.reasoning).toBe(`maybe ${call}?`);
    expect(out.toolCalls).toHaveLength(1);
    expect(out.content).toBeNull();
  });
  it("qwen3 with thinking on: a <tool_call> ends reasoning without </think>", () => {
    const text = 'I should call f.\n<tool_call>{"name": "f", "arguments": {}}</tool_call>';
    const out = whole(text, { toolFormat: hermes, reasoning: qwen3Reasoning, thinking: true });
    expect(out).toMatchObject({ reasoning: "I should call f.\n", content: null });
    expect(streamed(singleChars(text), { toolFormat: hermes, reasoning: qwen3Reasoning, thinking: true })).toEqual(out);
  });
  it("no tool format: the text is content (reasoning still split)", () => {
    expect(whole("<think>x</think>y<tool_call>", { reasoning: qwen3Reasoning })).toEqual({ content: "y<tool_call>", reasoning: "x", toolCalls: [] });
  });
});
