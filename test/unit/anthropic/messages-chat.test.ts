import { describe, expect, it } from "vitest";
import { chatMessagesOf, chatToMessage, chatTools, messagesToChat, stopReason } from "../../../src/api/anthropic/messages-chat.js";
import { MessagesEventWriter } from "../../../src/api/anthropic/messages-chat-stream.js";

describe("messagesToChat", () => {
  it("system, sampling, stop_sequences, thinking", () => {
    const chat = messagesToChat({ model: "m", system: [{ type: "text", text: "s" }], messages: [{ role: "user", content: "hi" }], max_tokens: 9, temperature: 0.5, top_k: 3, stop_sequences: ["X"], thinking: { type: "enabled", budget_tokens: 100 } });
    expect(chat).toEqual({ model: "m", stream: false, messages: [{ role: "system", content: "s" }, { role: "user", content: "hi" }], max_tokens: 9, temperature: 0.5, top_k: 3, stop: ["X"], chat_template_kwargs: { enable_thinking: true } });
  });
  it.each([
    [{ role: "assistant", content: [{ type: "text", text: "ok" }, { type: "tool_use", id: "t1", name: "f", input: { a: 1 } }] }, [{ role: "assistant", content: "ok", tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: '{"a":1}' } }] }]],
    [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "r" }] }] }, [{ role: "tool", tool_call_id: "t1", content: "r" }]],
    [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }, { type: "text", text: "more" }] }, [{ role: "tool", tool_call_id: "t1", content: "r" }, { role: "user", content: "more" }]],
  ])("blocks %#", (m, out) => expect(chatMessagesOf(m, "messages[0]")).toEqual(out));
  it("refuses an image block by name", () => expect(() => chatMessagesOf({ role: "user", content: [{ type: "image" }] }, "messages[0]")).toThrow(/messages\[0\]\.content\[0\]\.type/));
  it.each([
    [{ type: "auto" }, "auto"],
    [{ type: "any" }, "required"],
    [{ type: "none" }, "none"],
    [{ type: "tool", name: "f" }, { type: "function", function: { name: "f" } }],
  ])("tool_choice %j", (c, out) => {
    const r = chatTools({ tools: [{ name: "f", input_schema: { type: "object" } }], tool_choice: c });
    expect(r.tool_choice).toEqual(out);
    expect(r.tools).toEqual([{ type: "function", function: { name: "f", parameters: { type: "object" } } }]);
  });
});

describe("stop reasons and the Message", () => {
  it.each([
    ["tool_calls", null, "tool_use"],
    ["length", null, "max_tokens"],
    ["stop", "X", "stop_sequence"],
    ["stop", null, "end_turn"],
  ])("%s/%s → %s", (f, s, out) => expect(stopReason(f, s)).toBe(out));
  it("thinking, text and tool_use blocks", () => {
    const m = chatToMessage({ choices: [{ finish_reason: "tool_calls", message: { reasoning_content: "hm", content: "ok", tool_calls: [{ id: "c", function: { name: "f", arguments: '{"a":1}' } }] } }], usage: { prompt_tokens: 5, completion_tokens: 2 } }, { model: "m" }, "msg_1");
    expect(m.content).toEqual([{ type: "thinking", thinking: "hm", signature: "" }, { type: "text", text: "ok" }, { type: "tool_use", id: "c", name: "f", input: { a: 1 } }]);
    expect(m).toMatchObject({ stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: 5, output_tokens: 2 } });
  });
  it("the stream's event sequence", () => {
    const w = new MessagesEventWriter({ model: "m" }, "msg_1");
    const text = w.start() + w.chunk({ choices: [{ delta: { reasoning_content: "a" } }] }) + w.chunk({ choices: [{ delta: { content: "b" } }] }) + w.chunk({ choices: [{ delta: { tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{}" } }] }, finish_reason: "tool_calls" }] }) + w.end();
    const types = [...text.matchAll(/^event: (\S+)/gm)].map((m) => m[1]);
    expect(types).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(text).toContain('"stop_reason":"tool_use"');
  });
});
