// The Responses API over chat completions (api/openai/responses-chat*.ts): the request's items
// as chat messages, and a chat answer (whole, or as chunks) as the response object and the
// Responses events, with reasoning, function calls and a length cap.
import { describe, expect, it } from "vitest";
import { chatToResponse, responsesToChat } from "../../../src/api/openai/responses-chat.js";
import { ResponsesEventWriter } from "../../../src/api/openai/responses-chat-stream.js";
import { EventSplitter } from "../../../src/api/event-relay.js";
import { accumulateResponse } from "openai/lib/responses/ResponseAccumulator";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe("responsesToChat", () => {
  it("instructions, messages, a function call and its output become chat messages; fields map", () => {
    const body = { model: "m", instructions: "be brief", max_output_tokens: 9, temperature: 0.2, text: { format: { type: "json_schema", name: "s", schema: { type: "object" } } }, tools: [{ type: "function", name: "f", parameters: { type: "object" } }], tool_choice: { type: "function", name: "f" }, stream: true };
    const items = [
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }, { type: "input_text", text: " there" }] },
      { type: "function_call", call_id: "c1", name: "f", arguments: '{"a":1}' },
      { type: "function_call_output", call_id: "c1", output: "42" },
      { type: "reasoning", content: [] },
      { type: "message", role: "developer", content: "dev note" },
    ];
    expect(responsesToChat(body, items)).toEqual({
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hi there" },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } }] },
        { role: "tool", tool_call_id: "c1", content: "42" },
        { role: "system", content: "dev note" },
      ],
      temperature: 0.2,
      max_tokens: 9,
      response_format: { type: "json_schema", json_schema: { name: "s", schema: { type: "object" }, strict: false } },
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "f" } },
    });
  });

  it("an assistant turn's text and the calls after it are one assistant message", () => {
    const items = [
      { type: "message", role: "user", content: "q" },
      { type: "reasoning", content: [{ type: "reasoning_text", text: "hm" }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me check." }] },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call", call_id: "c2", name: "g", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "1" },
      { type: "function_call_output", call_id: "c2", output: { ok: true } },
      { type: "function_call", call_id: "c3", name: "f", arguments: "{}" },
    ];
    const call = (id: string, name: string) => ({ id, type: "function", function: { name, arguments: "{}" } });
    expect(responsesToChat({ model: "m" }, items).messages).toEqual([
      { role: "user", content: "q" },
      { role: "assistant", content: "Let me check.", tool_calls: [call("c1", "f"), call("c2", "g")] },
      { role: "tool", tool_call_id: "c1", content: "1" },
      { role: "tool", tool_call_id: "c2", content: '{"ok":true}' },
      { role: "assistant", content: "", tool_calls: [call("c3", "f")] },
    ]);
  });

  const TOOL = { type: "function", name: "f", description: "d", parameters: { type: "object" }, strict: true };
  it.each([
    ["no tools", {}, {}],
    ["a flat function tool, description and strict kept", { tools: [TOOL] }, { tools: [{ type: "function", function: { name: "f", description: "d", parameters: { type: "object" }, strict: true } }] }],
    ["parameters default to an empty object schema", { tools: [{ type: "function", name: "g" }] }, { tools: [{ type: "function", function: { name: "g", parameters: { type: "object", properties: {} } } }] }],
    ["tool_choice auto", { tools: [TOOL], tool_choice: "auto" }, { tool_choice: "auto" }],
    ["tool_choice none", { tools: [TOOL], tool_choice: "none" }, { tool_choice: "none" }],
    ["tool_choice required", { tools: [TOOL], tool_choice: "required" }, { tool_choice: "required" }],
    ["a named function", { tools: [TOOL], tool_choice: { type: "function", name: "f" } }, { tool_choice: { type: "function", function: { name: "f" } } }],
    ["allowed_tools in the flat shape", { tools: [TOOL], tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "f" }] } }, { tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "f" }] } }],
    ["reasoning effort", { reasoning: { effort: "low" } }, { reasoning_effort: "low" }],
    ["reasoning summary auto (none is written)", { reasoning: { effort: null, summary: "auto" } }, {}],
  ])("tools, tool_choice, reasoning: %s", (_, extra, want) => {
    const chat = responsesToChat({ model: "m", ...extra }, [{ type: "message", role: "user", content: "x" }]);
    expect(chat).toMatchObject(want);
    if (!("tools" in extra)) expect(chat.tools).toBeUndefined();
  });

  it.each([
    [[{ type: "message", role: "user", content: [{ type: "input_image", image_url: "x" }] }], {}, "input[0].content[0]"],
    [[{ type: "message", role: "user", content: "x" }], { tools: [{ type: "function" }] }, "tools[0].name"],
    [[{ type: "message", role: "user", content: "x" }], { tools: [{ type: "function", name: "f" }], tool_choice: { type: "function", name: "g" } }, "tool_choice.name"],
    [[{ type: "message", role: "user", content: "x" }], { tools: [{ type: "function", name: "f" }], tool_choice: { type: "web_search_preview" } }, "tool_choice"],
    [[{ type: "message", role: "user", content: "x" }], { tools: [{ type: "function", name: "f" }], tool_choice: 3 }, "tool_choice"],
    [[{ type: "message", role: "user", content: "x" }], { reasoning: { summary: "detailed" } }, "reasoning.summary"],
    [[{ type: "message", role: "user", content: "x" }], { tools: {} }, "tools"],
    [[{ type: "web_search_call" }], {}, "input[0].type"],
    [[{ type: "message", role: "user", content: "x" }], { tools: [{ type: "web_search" }] }, "tools[0].type"],
  ])("refuses what chat cannot carry, naming the field: %j", (items, extra, param) => {
    expect(() => responsesToChat({ model: "m", ...extra }, items)).toThrow(expect.objectContaining({ status: 400, param }));
  });
});

describe("chat answers as Responses", () => {
  it("a whole answer: reasoning, text and two calls as output items in order; a length cap is incomplete", () => {
    const chat = { choices: [{ finish_reason: "length", message: { reasoning_content: "think", content: "hello", tool_calls: [{ id: "c1", function: { name: "f", arguments: "{}" } }, { id: "c2", function: { name: "g", arguments: '{"x":1}' } }] } }], usage: { prompt_tokens: 5, completion_tokens: 7 } };
    const r = chatToResponse(chat, { model: "m" }, "resp_abc", 100) as Json;
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(r.output.map((o: Json) => o.type)).toEqual(["reasoning", "message", "function_call", "function_call"]);
    expect(r.output.map((o: Json) => o.status)).toEqual(["completed", "completed", "completed", "incomplete"]);
    expect(r.output[1].content[0].text).toBe("hello");
    expect(r.output.slice(2).map((o: Json) => [o.call_id, o.name, o.arguments])).toEqual([["c1", "f", "{}"], ["c2", "g", '{"x":1}']]);
    expect(r.usage).toMatchObject({ input_tokens: 5, output_tokens: 7, total_tokens: 12 });
  });

  it("chunks: the SDK's event sequence, deltas that add up, sequence numbers in order, the final response whole", () => {
    const w = new ResponsesEventWriter({ model: "m" }, "resp_abc", 100);
    const chunk = (delta: Json, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
    let sse = w.start();
    sse += w.chunk(chunk({ reasoning_content: "hm" }));
    sse += w.chunk(chunk({ content: "he" }));
    sse += w.chunk(chunk({ content: "llo" }));
    sse += w.chunk(chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: '{"a"' } }] }));
    sse += w.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }, "tool_calls"));
    sse += w.chunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 6 } });
    sse += w.end();
    const events = new EventSplitter().push(new TextEncoder().encode(sse)).map((e): Json => ({ event: e.event, ...(JSON.parse(e.data) as Json) }));
    expect(events.every((e) => e.event === e.type)).toBe(true);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      "response.completed",
    ]);
    const final = events.at(-1)!.response;
    expect(final.output.map((o: Json) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(final.output[1].content[0].text).toBe("hello");
    expect(final.output[2]).toMatchObject({ call_id: "c1", name: "f", arguments: '{"a":1}', status: "completed" });
    expect(final.usage).toMatchObject({ input_tokens: 3, output_tokens: 6 });
    expect(w.final()).toEqual(final);
    // The official SDK's accumulator (what responses.stream() runs) reads every event and
    // arrives at the same output.
    let snapshot: ReturnType<typeof accumulateResponse> | undefined;
    for (const e of events) snapshot = accumulateResponse(e as never, snapshot);
    expect(snapshot!.output).toEqual(final.output);
  });

  it("a length-capped stream ends response.incomplete, and final() says so too", () => {
    const w = new ResponsesEventWriter({ model: "m" }, "resp_abc", 100);
    w.start();
    w.chunk({ choices: [{ index: 0, delta: { content: "x" }, finish_reason: "length" }] });
    const end = w.end();
    expect(end).toContain("event: response.incomplete");
    expect(w.final().status).toBe("incomplete");
    expect((w.final().output as Json[]).map((o) => o.status)).toEqual(["incomplete"]);
    expect(end).toMatch(/"type":"response.output_item.done"[^\n]*"status":"incomplete"/);
  });
});

describe("the via-chat field table (accept or refuse, never ignore)", () => {
  const base = { model: "m", input: "x" };
  const items = [{ type: "message", role: "user", content: "x" }];
  it.each([
    ["temperature", 0.5, "temperature"],
    ["top_p", 0.9, "top_p"],
    ["top_k", 5, "top_k"],
    ["seed", 7, "seed"],
    ["stop", ["§"], "stop"],
    ["ignore_eos", true, "ignore_eos"],
    ["presence_penalty", 0.1, "presence_penalty"],
    ["frequency_penalty", 0.2, "frequency_penalty"],
    ["repetition_penalty", 1.1, "repetition_penalty"],
    ["parallel_tool_calls", false, "parallel_tool_calls"],
    ["user", "u", "user"],
    ["max_output_tokens", 9, "max_tokens"],
  ])("%s is carried (as %s)", (field, v, to) => {
    expect(responsesToChat({ ...base, [field]: v }, items)[to as string]).toEqual(v);
  });

  it.each([
    ["metadata", { a: "b" }],
    ["safety_identifier", "s"],
    ["prompt_cache_key", "k"],
    ["max_tool_calls", 3],
    ["stream_options", { include_obfuscation: false }],
    ["service_tier", "auto"],
    ["truncation", "disabled"],
    ["background", false],
    ["include", ["message.output_text.logprobs"]],
    ["store", false],
  ])("%s %j is accepted", (field, v) => {
    expect(() => responsesToChat({ ...base, [field]: v }, items)).not.toThrow();
  });

  it.each([
    ["truncation", "auto"],
    ["service_tier", "flex"],
    ["include", ["reasoning.encrypted_content"]],
    ["logit_bias", { "1": 2 }],
    ["min_p", 0.1],
  ])("%s %j is refused by name", (field, v) => {
    expect(() => responsesToChat({ ...base, [field]: v }, items)).toThrow(expect.objectContaining({ code: "unsupported_parameter", param: field }));
  });
});
