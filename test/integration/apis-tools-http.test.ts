// Tool use and reasoning on the Responses and Messages APIs over the HTTP PD path, to sim vLLM
// servers started with `--tool-call-parser hermes --enable-auto-tool-choice --reasoning-parser
// qwen3` (issue 29): the engines' parsers produce the calls, the gateway relays them (ids its
// own, the stream rewritten per event), stores them, and expands them into the next turn.
// Checked with the official `openai` and `@anthropic-ai/sdk` SDKs.
import Anthropic from "@anthropic-ai/sdk";
import { env } from "cloudflare:workers";
import type OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, NIXL_TAG, openai, openaiReceived } from "./openai-fixtures.js";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const PARSERS = { toolCallParser: "hermes", enableAutoToolChoice: true, reasoningParser: "qwen3" } as const;
const THOUGHT = "Weather needed.";
const CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const REPLY = `<think>${THOUGHT}</think>${CALL}`;
const say = (reply: string) => `<sim-say>${reply}</sim-say>`;
const schema = { type: "object", properties: { city: { type: "string" } } };
const RESPONSES_TOOLS: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", parameters: schema, strict: false }];
const ANTHROPIC_TOOLS: Anthropic.Tool[] = [{ name: "get_weather", input_schema: schema as Anthropic.Tool.InputSchema }];

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: httpPairSpecs(PARSERS, PARSERS) });
  return testGateway(httpPairConfig(cluster), { RESPONSES: env.RESPONSES });
}

const received = async (engine: string, method: string) => (await openaiReceived(cluster!, engine)).filter((r) => r.method === method);

async function expectOnePdRun(method: string): Promise<void> {
  const [p, ...morePrefill] = await received("prefill", method);
  const [d, ...moreDecode] = await received("decode", method);
  expect([morePrefill.length, moreDecode.length]).toEqual([0, 0]);
  expect(p!.body).toMatchObject({ kv_transfer_params: NIXL_TAG, stream: false });
  expect((d!.body as Json).kv_transfer_params.remote_engine_id).toBe("prefill-eng");
  expect((await cluster!.stats("decode")).promptTokensComputed).toBe(0);
}

describe("Responses on openai-http engines: function tools and reasoning", () => {
  it("create: reasoning and function_call items from the engine's parsers, through PD, stored; the next turn carries the call and its output", async () => {
    const gw = await start();
    const r = await openai(gw).responses.create({ model: MODEL, input: say(REPLY), tools: RESPONSES_TOOLS });
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    const call = r.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: "get_weather", arguments: '{"city": "Paris"}', status: "completed" });
    expect((r.output[0] as Json).content).toEqual([{ type: "reasoning_text", text: THOUGHT }]);
    expect(r.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    await expectOnePdRun("/v1/responses");
    const [d] = await received("decode", "/v1/responses");
    expect((d!.body as Json).tools).toEqual(RESPONSES_TOOLS);

    const next = await openai(gw).responses.create({
      model: MODEL, previous_response_id: r.id, tools: RESPONSES_TOOLS,
      input: [{ type: "function_call_output", call_id: call.call_id, output: '{"temp": 21}' }],
    });
    expect(next.previous_response_id).toBe(r.id);
    const sent = (await received("decode", "/v1/responses")).at(-1)!.body as Json;
    expect(sent.input.at(-2)).toMatchObject({ type: "function_call", call_id: call.call_id, name: "get_weather", arguments: '{"city": "Paris"}' });
    expect(sent.input.at(-1)).toEqual({ type: "function_call_output", call_id: call.call_id, output: '{"temp": 21}' });
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);
  });

  it("stream: the reasoning and argument deltas reach the SDK; the final response is the stored one", async () => {
    const gw = await start();
    const stream = openai(gw).responses.stream({ model: MODEL, input: say(REPLY), tools: RESPONSES_TOOLS });
    let args = "";
    let reasoning = "";
    const types = new Set<string>();
    for await (const e of stream) {
      types.add(e.type);
      if (e.type === "response.function_call_arguments.delta") args += e.delta;
      if (e.type === "response.reasoning_text.delta") reasoning += e.delta;
    }
    const final = await stream.finalResponse();
    expect(types).toContain("response.function_call_arguments.done");
    expect({ reasoning, args: JSON.parse(args) as unknown }).toEqual({ reasoning: THOUGHT, args: { city: "Paris" } });
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "function_call"]);
    await gw.settle();
    const stored = (await (await gw.fetch(`http://gateway.test/v1/responses/${final.id}`)).json()) as Json;
    expect(stored.output.map((o: Json) => o.type)).toEqual(["reasoning", "function_call"]);
    expect(stored.output[1]).toMatchObject({ name: "get_weather", arguments: '{"city": "Paris"}' });
    await expectOnePdRun("/v1/responses");
    await expectNoPinnedBlocks(cluster!);
  });
});

function anthropic(gw: TestGateway): Anthropic {
  return new Anthropic({ baseURL: "http://gateway.test", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });
}

describe("Messages on openai-http engines: tool use and thinking", () => {
  it("create: thinking and tool_use blocks, stop_reason tool_use, through PD; the tool_result turn reaches the engine", async () => {
    const gw = await start();
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: say(REPLY) }];
    const m = await anthropic(gw).messages.create({ model: MODEL, max_tokens: 200, messages, tools: ANTHROPIC_TOOLS });
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(m.content[0]).toMatchObject({ thinking: THOUGHT });
    const use = m.content[1] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
    await expectOnePdRun("/v1/messages");

    const followUp: Anthropic.MessageParam[] = [...messages, { role: "assistant", content: m.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "21 degrees" }] }];
    const next = await anthropic(gw).messages.create({ model: MODEL, max_tokens: 5, messages: followUp, tools: ANTHROPIC_TOOLS });
    expect(next.type).toBe("message");
    const sent = (await received("decode", "/v1/messages")).at(-1)!.body as Json;
    expect(sent.messages.at(-1)).toEqual({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "21 degrees" }] });
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);
  });

  it("stream: the SDK assembles thinking and tool_use from the relayed events", async () => {
    const gw = await start();
    const stream = anthropic(gw).messages.stream({ model: MODEL, max_tokens: 200, messages: [{ role: "user", content: say(REPLY) }], tools: ANTHROPIC_TOOLS });
    const deltas = new Set<string>();
    stream.on("streamEvent", (e) => {
      if (e.type === "content_block_delta") deltas.add(e.delta.type);
    });
    const final = await stream.finalMessage();
    expect(deltas).toEqual(new Set(["thinking_delta", "signature_delta", "input_json_delta"]));
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(final.content[1]).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ surface: "anthropic", endpoint: "/v1/messages", streaming: true, status: 200 }]);
    await expectOnePdRun("/v1/messages");
    await expectNoPinnedBlocks(cluster!);
  });
});
