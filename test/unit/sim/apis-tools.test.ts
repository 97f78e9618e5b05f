// vLLM's Responses and Messages APIs on a sim engine started as `vllm serve --tool-call-parser
// hermes --enable-auto-tool-choice --reasoning-parser qwen3`, driven by the official SDKs: the
// parsers split a scripted reply into reasoning, text and tool calls, streamed and not, the
// way each API's converter presents them (vllm/entrypoints/anthropic/serving.py,
// vllm/entrypoints/openai/responses/simple_streaming_events.py).
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptOf } from "../../../sim/script.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, parseNamedSse } from "./helpers.js";

let c: RunningCluster;
let plain: RunningCluster;
let openai: OpenAI;
let anthropic: Anthropic;
const MODEL = "m-tools";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const THOUGHT = "Weather needed.";
const CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const say = (reply: string) => `<sim-say>${reply}</sim-say>`;
const schema = { type: "object", properties: { city: { type: "string" } } };
const RESPONSES_TOOLS: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", parameters: schema, strict: false }];
const ANTHROPIC_TOOLS: Anthropic.Tool[] = [{ name: "get_weather", input_schema: schema as Anthropic.Tool.InputSchema }];

beforeAll(async () => {
  c = await cluster([{ name: "t", role: "both", kvConnector: "none", model: MODEL, latency: FAST, toolCallParser: "hermes", enableAutoToolChoice: true, reasoningParser: "qwen3" }]);
  plain = await cluster([{ name: "p", role: "both", kvConnector: "none", model: MODEL, latency: FAST }]);
  const url = c.engine("t").url;
  openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: url, apiKey: "x", maxRetries: 0 });
});
afterAll(async () => {
  await c.close();
  await plain.close();
});

describe("Responses", () => {
  it("create: a reasoning item, the text, a function_call per call; reasoning tokens counted", async () => {
    const reply = `<think>${THOUGHT}</think>Checking.${CALL}`;
    const r = await openai.responses.create({ model: MODEL, input: say(reply), tools: RESPONSES_TOOLS });
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(r.output[0]).toMatchObject({ id: expect.stringMatching(/^rs_/), content: [{ type: "reasoning_text", text: THOUGHT }], summary: [] });
    expect(r.output_text).toBe("Checking.");
    expect(r.output[2]).toMatchObject({ id: expect.stringMatching(/^fc_/), call_id: expect.stringMatching(/^call_/), name: "get_weather", arguments: '{"city": "Paris"}', status: "completed" });
    expect(r.status).toBe("completed");
    expect(r.usage!.output_tokens).toBe(scriptOf(reply).ids.length);
    expect(r.usage!.output_tokens_details.reasoning_tokens).toBe(scriptOf(THOUGHT).ids.length);
  });

  it("stream: the items' events in order; the SDK assembles the same output", async () => {
    const reply = `<think>${THOUGHT}</think>${CALL}`;
    const stream = openai.responses.stream({ model: MODEL, input: say(reply), tools: RESPONSES_TOOLS });
    const types: string[] = [];
    let args = "";
    let reasoning = "";
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === "response.function_call_arguments.delta") args += e.delta;
      if (e.type === "response.reasoning_text.delta") reasoning += e.delta;
    }
    const final = await stream.finalResponse();
    const distinct = types.filter((t, i) => t !== types[i - 1]);
    expect(distinct).toEqual([
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.completed",
    ]);
    expect(reasoning).toBe(THOUGHT);
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    expect(final.output[1]).toMatchObject({ name: "get_weather", arguments: '{"city": "Paris"}' });
  });

  it("tool_choice required and text.format json_schema are the engine's structured outputs", async () => {
    const r = await openai.responses.create({ model: MODEL, input: "x", tools: RESPONSES_TOOLS, tool_choice: "required" });
    expect(r.output.filter((o) => o.type === "function_call").map((o) => (o as Json).name)).toEqual(["get_weather"]);
    const j = await openai.responses.create({ model: MODEL, input: "x", text: { format: { type: "json_schema", name: "c", schema: { ...schema, required: ["city"] } } } });
    expect(JSON.parse(j.output_text)).toEqual({ city: "sim" });
  });

  it("an engine without a tool parser answers in text, with no refusal", async () => {
    const sdk = new OpenAI({ baseURL: `${plain.engine("p").url}/v1`, apiKey: "x", maxRetries: 0 });
    const r = await sdk.responses.create({ model: MODEL, input: say(CALL), tools: RESPONSES_TOOLS });
    expect(r.output.map((o) => o.type)).toEqual(["message"]);
    expect(r.output_text).toBe(CALL);
    expect(r.usage!.output_tokens_details.reasoning_tokens).toBe(0);
  });
});

describe("Messages", () => {
  it("create: thinking, text and tool_use blocks; stop_reason tool_use", async () => {
    const reply = `<think>${THOUGHT}</think>Checking.${CALL}`;
    const m = await anthropic.messages.create({ model: MODEL, max_tokens: 200, messages: [{ role: "user", content: say(reply) }], tools: ANTHROPIC_TOOLS });
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content).toEqual([
      { type: "thinking", thinking: THOUGHT, signature: expect.stringMatching(/^[0-9a-f]{32}$/) },
      { type: "text", text: "Checking." },
      { type: "tool_use", id: expect.stringMatching(/^chatcmpl-tool-/), name: "get_weather", input: { city: "Paris" } },
    ]);
  });

  it("stream: a block per kind, input_json deltas, a signature ending the thinking block", async () => {
    const reply = `<think>${THOUGHT}</think>${CALL}`;
    const res = await fetch(`${c.engine("t").url}/v1/messages`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, max_tokens: 200, stream: true, messages: [{ role: "user", content: say(reply) }], tools: ANTHROPIC_TOOLS }),
    });
    const events = parseNamedSse(await res.text());
    const shape = events.map((e) => (e.data.delta?.type ? `${e.event}:${e.data.delta.type}` : e.data.content_block ? `${e.event}:${e.data.content_block.type}` : e.event));
    expect(shape.filter((t, i) => t !== shape[i - 1])).toEqual([
      "message_start", "content_block_start:thinking", "content_block_delta:thinking_delta", "content_block_delta:signature_delta", "content_block_stop",
      "content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop", "message_delta", "message_stop",
    ]);
    expect(events.at(-2)!.data.delta).toEqual({ stop_reason: "tool_use" });
    const stream = anthropic.messages.stream({ model: MODEL, max_tokens: 200, messages: [{ role: "user", content: say(reply) }], tools: ANTHROPIC_TOOLS });
    const final = await stream.finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(final.content[1]).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
  });

  it("tool_choice any and tool are chat's required and named choices", async () => {
    const any = await anthropic.messages.create({ model: MODEL, max_tokens: 200, messages: [{ role: "user", content: "x" }], tools: ANTHROPIC_TOOLS, tool_choice: { type: "any" } });
    expect(any.content.filter((b) => b.type === "tool_use").map((b) => (b as Anthropic.ToolUseBlock).name)).toEqual(["get_weather"]);
    const named = await anthropic.messages.create({ model: MODEL, max_tokens: 200, messages: [{ role: "user", content: "x" }], tools: ANTHROPIC_TOOLS, tool_choice: { type: "tool", name: "get_weather" } });
    expect(named.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: expect.any(Object) });
  });

  it("tools on an engine without a tool parser: chat's refusal of auto, in Anthropic's envelope", async () => {
    const sdk = new Anthropic({ baseURL: plain.engine("p").url, apiKey: "x", maxRetries: 0 });
    const err = await sdk.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "x" }], tools: ANTHROPIC_TOOLS }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: "error", error: { message: expect.stringContaining("--enable-auto-tool-choice") } });
  });
});
