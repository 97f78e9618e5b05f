// The conversation and tools as vLLM hands them to a chat template (chat_utils.py
// _parse_chat_message_content / _postprocess_messages; ChatCompletionToolsParam.model_dump()),
// as tables over plain JSON in and out. The byte-exact renders are the "vllm-*" goldens.
import { describe, expect, it } from "vitest";
import { contentText, vllmConversation, vllmToolDicts } from "../../../src/api/openai/chat-conversation.js";
import { GatewayError } from "../../../src/core/errors.js";
import { parseLosslessJson, toPlain, type JsonNumber, type LosslessJson } from "../../../src/tokenizer/lossless-json.js";

const lossless = (v: unknown) => parseLosslessJson(JSON.stringify(v));
const conv = (messages: unknown[]) => toPlain(vllmConversation(lossless(messages) as LosslessJson[]));
const tools = (t: unknown) => toPlain(vllmToolDicts(lossless(t)) as LosslessJson);

describe("vllmConversation", () => {
  const call = (args: unknown) => ({ id: "c1", type: "function", function: { name: "f", arguments: args } });
  const rows: [string, unknown, unknown][] = [
    ["string content stays", { role: "user", content: "hi" }, { role: "user", content: "hi" }],
    ["null content is empty text", { role: "assistant", content: null }, { role: "assistant", content: "" }],
    ["absent content is empty text", { role: "assistant" }, { role: "assistant", content: "" }],
    ["text parts joined with a newline", { role: "user", content: [{ type: "text", text: "a" }, { type: "input_text", text: "b" }, { type: "output_text", text: "c" }] }, { role: "user", content: "a\nb\nc" }],
    ["refusal and thinking parts are text; a null text part is skipped", { role: "assistant", content: [{ type: "refusal", refusal: "no" }, { type: "text", text: null }, { type: "thinking", thinking: "hm" }] }, { role: "assistant", content: "no\nhm" }],
    ["arguments string parsed", { role: "assistant", content: null, tool_calls: [call('{"x": 1}')] }, { role: "assistant", content: "", tool_calls: [{ ...call({ x: 1 }) }] }],
    ["arguments that are not JSON become {}", { role: "assistant", content: "", tool_calls: [call("not json")] }, { role: "assistant", content: "", tool_calls: [call({})] }],
    ["empty arguments become {}", { role: "assistant", content: "", tool_calls: [call("")] }, { role: "assistant", content: "", tool_calls: [call({})] }],
    ["arguments already an object stay", { role: "assistant", content: "", tool_calls: [call({ y: [1] })] }, { role: "assistant", content: "", tool_calls: [call({ y: [1] })] }],
    ["null arguments become {}", { role: "assistant", content: "", tool_calls: [call(null)] }, { role: "assistant", content: "", tool_calls: [call({})] }],
    ["an empty tool_calls list is dropped", { role: "assistant", content: "x", tool_calls: [] }, { role: "assistant", content: "x" }],
    ["reasoning under both names", { role: "assistant", content: "a", reasoning: "r" }, { role: "assistant", content: "a", reasoning: "r", reasoning_content: "r" }],
    ["a client's reasoning_content is not read", { role: "assistant", content: "a", reasoning_content: "r" }, { role: "assistant", content: "a" }],
    ["tool: tool_call_id kept", { role: "tool", tool_call_id: "c1", content: "ok" }, { role: "tool", content: "ok", tool_call_id: "c1" }],
    ["tool_call_id only on tool messages", { role: "user", tool_call_id: "c1", content: "ok" }, { role: "user", content: "ok" }],
    ["name kept when a string, other fields dropped", { role: "user", content: "hi", name: "alice", audio: { id: "x" } }, { role: "user", content: "hi", name: "alice" }],
    ["developer carries its tools (null without)", { role: "developer", content: "d" }, { role: "developer", content: "d", tools: null }],
  ];
  for (const [name, input, expected] of rows) {
    it(name, () => {
      expect(conv([input])).toEqual([expected]);
    });
  }

  it("numbers in arguments keep Python's reading (1.0 stays a float, big ints exact)", () => {
    const out = vllmConversation(lossless([{ role: "assistant", content: "", tool_calls: [call('{"a": 1.0, "b": 12345678901234567890}')] }]) as LosslessJson[]);
    const args = ((((out[0] as Map<string, LosslessJson>).get("tool_calls") as LosslessJson[])[0] as Map<string, LosslessJson>).get("function") as Map<string, LosslessJson>).get("arguments") as Map<string, LosslessJson>;
    expect((args.get("a") as JsonNumber).text).toBe("1.0");
    expect((args.get("b") as JsonNumber).text).toBe("12345678901234567890");
  });

  it("does not change the client's messages", () => {
    const input = lossless([{ role: "assistant", content: null, tool_calls: [call('{"x": 1}')] }]) as LosslessJson[];
    const before = JSON.stringify(toPlain(input as LosslessJson));
    vllmConversation(input);
    expect(JSON.stringify(toPlain(input as LosslessJson))).toBe(before);
  });

  it("a non-text part is a 400 naming it", () => {
    expect(() => contentText(lossless([{ type: "text", text: "a" }, { type: "image_url", image_url: { url: "x" } }]), 3)).toThrow(GatewayError);
    try {
      contentText(lossless([{ type: "image_url" }]), 3);
    } catch (err) {
      expect(err).toMatchObject({ status: 400, code: "unsupported_content", param: "messages[3].content[0]" });
    }
  });
});

describe("vllmToolDicts", () => {
  it("no tools: null", () => {
    expect(vllmToolDicts(undefined)).toBeNull();
  });
  const rows: [string, unknown, unknown][] = [
    ["description and parameters null when absent", { type: "function", function: { name: "f" } }, { type: "function", function: { name: "f", description: null, parameters: null } }],
    ["pydantic order, whatever the client's", { function: { parameters: { type: "object" }, name: "f", description: "d" }, type: "function" }, { type: "function", function: { name: "f", description: "d", parameters: { type: "object" } } }],
    ["strict kept when set, unknown fields dropped", { type: "function", function: { name: "f", strict: true, extra: 1 } }, { type: "function", function: { name: "f", description: null, parameters: null, strict: true } }],
    ["defer_loading on the tool reaches its function", { type: "function", defer_loading: true, function: { name: "f" } }, { type: "function", function: { name: "f", description: null, parameters: null, defer_loading: true }, defer_loading: true }],
  ];
  for (const [name, input, expected] of rows) {
    it(name, () => {
      expect(tools([input])).toEqual([expected]);
    });
  }
});
