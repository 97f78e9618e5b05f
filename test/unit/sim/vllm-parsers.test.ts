// The sim's own hermes tool-call and qwen3 reasoning parsers, table by table, against what
// vLLM's hermes_tool_parser.py and qwen3_reasoning_parser.py return.
import { describe, expect, it } from "vitest";
import { HermesStream, Qwen3Stream, hermesExtract, partialTagOverlap, pyJsonDumps, qwen3Split } from "../../../sim/vllm-parsers.js";
import { scriptOf } from "../../../sim/script.js";
import { SpecError, validateClusterSpec } from "../../../sim/spec.js";

describe("qwen3Split (non-streamed)", () => {
  const rows: [string, boolean, string | null, string | null][] = [
    ["<think>a</think>b", true, "a", "b"],
    ["a</think>b", true, "a", "b"],
    ["a</think>", true, "a", null],
    ["plain", true, "plain", null],
    ["plain", false, null, "plain"],
    ["why<tool_call>\n<function=f>", true, "why", "<tool_call>\n<function=f>"],
    ['why<tool_call>{"name":"f"}', true, 'why<tool_call>{"name":"f"}', null],
  ];
  for (const [text, thinking, reasoning, content] of rows) {
    it(`${JSON.stringify(text)} thinking=${thinking}`, () => expect(qwen3Split(text, thinking)).toEqual({ reasoning, content }));
  }
});

describe("hermesExtract (non-streamed)", () => {
  const rows: [string, { name: string; arguments: string }[], string | null][] = [
    ["no calls", [], "no calls"],
    ['<tool_call>{"name":"f","arguments":{"a":[1,2],"b":"é"}}</tool_call>', [{ name: "f", arguments: '{"a": [1, 2], "b": "é"}' }], null],
    ['pre<tool_call>{"name":"f","arguments":{}}</tool_call>post', [{ name: "f", arguments: "{}" }], "pre"],
    ['<tool_call>{"name":"f","arguments":{"x":1}}', [{ name: "f", arguments: '{"x": 1}' }], null],
    ["<tool_call>{bad}</tool_call>", [], "<tool_call>{bad}</tool_call>"],
    ['<tool_call>{"name":"f"}</tool_call>', [], '<tool_call>{"name":"f"}</tool_call>'],
  ];
  for (const [text, calls, content] of rows) {
    it(JSON.stringify(text), () => expect(hermesExtract(text)).toEqual({ calls, content }));
  }
});

describe("HermesStream", () => {
  it("content before the tag (holding back a partial tag), then name and argument pieces", () => {
    const s = new HermesStream();
    const text = 'Hi <tool_call>{"name": "f", "arguments": {"q": "a}b"}}</tool_call>';
    const out = scriptOf(text).texts.map((t) => s.feed(t));
    const content = out.map((d) => d?.content ?? "").join("");
    const calls = out.flatMap((d) => d?.tool_calls ?? []);
    expect(content).toBe("Hi ");
    expect(calls[0]).toMatchObject({ index: 0, type: "function", function: { name: "f" } });
    expect(calls.map((c) => c.function.arguments ?? "").join("")).toBe('{"q": "a}b"}');
  });
  it("partialTagOverlap", () => {
    expect(partialTagOverlap("abc<tool", "<tool_call>")).toBe(5);
    expect(partialTagOverlap("abc", "<tool_call>")).toBe(0);
  });
});

describe("Qwen3Stream", () => {
  it("reasoning until </think>, content after; thinking off: all content", () => {
    const s = new Qwen3Stream(true);
    expect(["<think>", "a", "b</think>c", "d"].map((d) => s.feed(d))).toEqual([{}, { reasoning: "a" }, { reasoning: "b", content: "c" }, { content: "d" }]);
    expect(new Qwen3Stream(false).feed("<think>x")).toEqual({ content: "<think>x" });
  });
});

describe("the rest", () => {
  it("pyJsonDumps writes Python's separators", () => expect(pyJsonDumps({ a: [1, { b: null }], c: "x" })).toBe('{"a": [1, {"b": null}], "c": "x"}'));
  it("scriptOf: markup is one token, other text four characters at most after its leading space", () => {
    expect(scriptOf("<think>hello world</think>").texts).toEqual(["<think>", "hell", "o", " worl", "d", "</think>"]);
  });
  it("engine specs take the parser flags and refuse unknown parsers", () => {
    const base = { name: "e", role: "both", kvConnector: "none" };
    expect(() => validateClusterSpec({ engines: [{ ...base, toolCallParser: "hermes", enableAutoToolChoice: true, reasoningParser: "qwen3" }] })).not.toThrow();
    expect(() => validateClusterSpec({ engines: [{ ...base, toolCallParser: "mistral" }] })).toThrow(SpecError);
    expect(() => validateClusterSpec({ engines: [{ ...base, reasoningParser: "deepseek_r1" }] })).toThrow(/reasoningParser/);
  });
});
