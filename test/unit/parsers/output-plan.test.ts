// The one plan per chat request (parsers, tool_choice's constraint, reasoning on/off, marker
// tokens), and the finish_reason rule vLLM's chat server applies, as tables.
import { describe, expect, it } from "vitest";
import { finishReasonOf, planOutput, thinkingOf } from "../../../src/parsers/output-plan.js";
import { resolveParsers } from "../../../src/parsers/resolve.js";
import { ToolRequestError } from "../../../src/parsers/tool-choice.js";

const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };
const tools = [weather];
const qwen3 = resolveParsers("Qwen/Qwen3-0.6B", "qwen3", {});
const llama = resolveParsers("meta-llama/Llama-3.3-70B-Instruct", "llama", {});
const bare = resolveParsers("my-model", undefined, {});
const noReasoning = resolveParsers("Qwen/Qwen3-0.6B", "qwen3", { reasoning_parser: "none" });

describe("planOutput", () => {
  const rows: [string, Record<string, unknown>, typeof qwen3, Record<string, unknown>][] = [
    ["plain chat, Qwen3: reasoning parser only", {}, qwen3, { toolMode: "none", constraint: { case: undefined }, includeReasoning: true, parser: { reasoning: qwen3.reasoning.format, parallelToolCalls: true } }],
    ["plain chat, no parsers: plain content", {}, bare, { toolMode: "none", parser: undefined, keepSpecialTokens: [] }],
    ["plain chat, reasoning parser off: plain content", {}, noReasoning, { parser: undefined }],
    ["tools (auto): tool format and its tools", { tools }, qwen3, { toolMode: "auto", constraint: { case: undefined }, parser: { toolFormat: qwen3.tool.format, reasoning: qwen3.reasoning.format } }],
    ["tool_choice none: no tool format", { tools, tool_choice: "none" }, qwen3, { toolMode: "none", parser: { reasoning: qwen3.reasoning.format } }],
    ["named: json_schema constraint, output read as the arguments", { tools, tool_choice: { type: "function", function: { name: "get_weather" } } }, bare, { toolMode: "named", constraint: { case: "jsonSchema" }, parser: { constrained: { kind: "named", name: "get_weather" } } }],
    ["required: array constraint, needs no tool parser", { tools, tool_choice: "required" }, bare, { toolMode: "required", constraint: { case: "jsonSchema" }, parser: { constrained: { kind: "array" } } }],
    ["parallel_tool_calls false reaches the parser", { tools, parallel_tool_calls: false }, qwen3, { parser: { parallelToolCalls: false } }],
    ["the thinking switch reaches the parser", { chat_template_kwargs: { enable_thinking: true } }, qwen3, { parser: { thinking: true } }],
    ["include_reasoning false", { include_reasoning: false }, qwen3, { includeReasoning: false }],
  ];
  for (const [name, body, parsers, expected] of rows) {
    it(name, () => {
      expect(planOutput(body, parsers)).toMatchObject(expected);
    });
  }

  it("the tool format's marker tokens are kept through detokenization (Llama's <|python_tag|>), and only under auto", () => {
    expect(planOutput({ tools }, llama).keepSpecialTokens).toContain("<|python_tag|>");
    expect(planOutput({ tools, tool_choice: "none" }, llama).keepSpecialTokens).toEqual([]);
    expect(planOutput({}, llama).keepSpecialTokens).toEqual([]);
  });

  it("no thinking switch: the parser decides where the reply starts", () => {
    expect(planOutput({}, qwen3).parser).not.toHaveProperty("thinking");
  });

  it('"auto" on a model without a tool parser is a 400 naming the field that asked', () => {
    const err = (body: Record<string, unknown>) => {
      try {
        planOutput(body, bare);
      } catch (e) {
        return e;
      }
      return undefined;
    };
    expect(err({ tools })).toBeInstanceOf(ToolRequestError);
    expect((err({ tools }) as ToolRequestError).field).toBe("tools");
    expect((err({ tools, tool_choice: "auto" }) as ToolRequestError).field).toBe("tool_choice");
    expect((err({ tools, tool_choice: "auto" }) as Error).message).toMatch(/tool_parser/);
    expect((err({ include_reasoning: "yes" }) as ToolRequestError).field).toBe("include_reasoning");
  });
});

describe("thinkingOf", () => {
  const rows: [unknown, boolean | undefined][] = [
    [undefined, undefined],
    [{}, undefined],
    [{ enable_thinking: true }, true],
    [{ enable_thinking: false }, false],
    [{ thinking: true }, true],
    [{ enable_thinking: false, thinking: true }, false],
    [{ enable_thinking: "yes" }, undefined],
    ["x", undefined],
  ];
  for (const [kwargs, expected] of rows) {
    it(`${JSON.stringify(kwargs)} -> ${expected}`, () => {
      expect(thinkingOf(kwargs === undefined ? {} : { chat_template_kwargs: kwargs })).toBe(expected);
    });
  }
});

describe("finishReasonOf (vLLM serving_chat)", () => {
  const rows: [string, "none" | "auto" | "required" | "named", number, string][] = [
    ["stop", "auto", 1, "tool_calls"],
    ["length", "auto", 2, "tool_calls"],
    ["stop", "auto", 0, "stop"],
    ["stop", "required", 1, "tool_calls"],
    ["length", "required", 1, "length"],
    ["stop", "named", 1, "stop"],
    ["stop", "none", 0, "stop"],
    ["length", "none", 0, "length"],
  ];
  for (const [engine, mode, calls, expected] of rows) {
    it(`${engine} / ${mode} / ${calls} call(s) -> ${expected}`, () => {
      expect(finishReasonOf(engine, mode, calls)).toBe(expected);
    });
  }
});
