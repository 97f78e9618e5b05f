// Tool calls and reasoning for OpenAI clients on VllmEngine engines (issue 28): the gateway
// reads the model's replies with the parsers chosen for it (Qwen3: hermes + qwen3) and answers
// in OpenAI's shapes, streamed and not, through the official openai SDK. The sim's Qwen3
// engines emit the real tokens of a scripted reply (<sim-say>), so the markup arrives as the
// model's own tokens; under tool_choice "required" or a named function the sim answers what
// the constraint the gateway sent allows, so a call coming back proves the constraint went out.
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { adminGateway } from "../support/admin.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";
import type { EngineSpec } from "../../sim/types.js";

const MODEL = "Qwen/Qwen3-0.6B";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(): Promise<TestGateway> {
  return testGateway(await clusterConfig());
}

async function clusterConfig() {
  const engines: EngineSpec[] = [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: MODEL, port: 0, latency: FAST },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: MODEL, port: 0, latency: FAST },
  ];
  cluster = await startTestCluster({ engines });
  return {
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: "connect" }],
        decode: [{ name: "decode", url: cluster.url("decode"), transport: "grpc-web" }],
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  };
}

const sdk = (gw: TestGateway) => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });

const TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
];

const call = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
/** The scripted reply, ended by a stop string the gateway applies (the sim cycles a reply when
 *  the run is longer, and would end it at a random natural length without ignore_eos). */
const say = (text: string) => [{ role: "user" as const, content: `<sim-say>${text}§</sim-say>` }];
const END = { stop: ["§"], ignore_eos: true } as Record<string, unknown>;

describe("tool calls on VllmEngine engines", () => {
  it("one call: tool_calls, content null, finish_reason tool_calls (not streamed)", async () => {
    const gw = await start();
    const reply = call("get_weather", '{"city": "Paris"}');
    const r = await sdk(gw).chat.completions.create({ model: MODEL, messages: say(reply), tools: TOOLS, max_tokens: 40, ...END });
    const c = r.choices[0]!;
    expect(c.finish_reason).toBe("tool_calls");
    expect(c.message.content).toBeNull();
    expect(c.message.tool_calls).toHaveLength(1);
    const tc = c.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    expect(tc.type).toBe("function");
    expect(tc.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    expect(tc.function).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' });
  });

  it("text before two calls, streamed with chat.completions.stream: the same as not streamed, no markup in content", async () => {
    const gw = await start();
    const reply = `Let me check.\n${call("get_weather", '{"city": "Paris"}')}\n${call("get_time", '{"zone": "CET"}')}`;
    const body = { model: MODEL, messages: say(reply), tools: TOOLS, max_tokens: 80, ...END };
    const whole = await sdk(gw).chat.completions.create(body);
    const stream = sdk(gw).chat.completions.stream(body);
    const contents: string[] = [];
    stream.on("content", (delta) => contents.push(delta));
    const final = await stream.finalChatCompletion();
    for (const r of [whole, final]) {
      const c = r.choices[0]!;
      expect(c.finish_reason).toBe("tool_calls");
      expect(c.message.content).toBe("Let me check.\n");
      expect((c.message.tool_calls ?? []).map((t) => (t as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function)).toEqual([
        { name: "get_weather", arguments: '{"city":"Paris"}' },
        { name: "get_time", arguments: '{"zone":"CET"}' },
      ]);
    }
    expect(contents.join("")).not.toContain("<tool_call>");
  });

  it("logprobs with the parsers active: one per generated token, streamed and not, the same", async () => {
    const gw = await start();
    const body = { model: MODEL, messages: say(`Sure.\n${call("get_weather", '{"city": "Paris"}')}`), tools: TOOLS, max_tokens: 60, logprobs: true, top_logprobs: 1, ...END };
    const whole = await sdk(gw).chat.completions.create(body);
    const tokens = (whole.choices[0]!.logprobs?.content ?? []).map((t) => t.token);
    expect(tokens.length).toBe(whole.usage!.completion_tokens);
    // The markup's tokens are among them: logprobs are per token, whatever the parser made of the text.
    expect(tokens.join("")).toContain("<tool_call>");
    const streamed: string[] = [];
    for await (const chunk of await sdk(gw).chat.completions.create({ ...body, stream: true })) {
      for (const ch of chunk.choices) streamed.push(...(ch.logprobs?.content ?? []).map((t) => t.token));
    }
    expect(streamed).toEqual(tokens);
  });

  it("parallel_tool_calls false keeps the first call", async () => {
    const gw = await start();
    const reply = `${call("get_weather", '{"city": "Paris"}')}\n${call("get_time", '{"zone": "CET"}')}`;
    const r = await sdk(gw).chat.completions.create({ model: MODEL, messages: say(reply), tools: TOOLS, parallel_tool_calls: false, max_tokens: 80, ...END });
    expect(r.choices[0]!.message.tool_calls).toHaveLength(1);
  });

  it("a named function: the engine request carries its parameters as json_schema, and the reply is its arguments", async () => {
    const gw = await start();
    const r = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "weather?" }], tools: TOOLS, tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 40 });
    const [d] = await generatesReceived(cluster!, "decode");
    const constraint = (d!.sampling_params as Record<string, unknown>).json_schema as string;
    expect(JSON.parse(constraint)).toEqual((TOOLS[0] as OpenAI.Chat.Completions.ChatCompletionFunctionTool).function.parameters);
    const tc = r.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    expect(tc.function.name).toBe("get_weather");
    expect(JSON.parse(tc.function.arguments)).toHaveProperty("city");
    expect(r.choices[0]!.finish_reason).toBe("stop");
  });

  it('tool_choice "required": an array schema goes out; each element comes back as a call, streamed too', async () => {
    const gw = await start();
    const body = { model: MODEL, messages: [{ role: "user" as const, content: "anything" }], tools: TOOLS, tool_choice: "required" as const, max_tokens: 60 };
    const stream = sdk(gw).chat.completions.stream(body);
    const final = await stream.finalChatCompletion();
    const [d] = await generatesReceived(cluster!, "decode");
    const schema = JSON.parse((d!.sampling_params as Record<string, unknown>).json_schema as string) as Record<string, unknown>;
    expect(schema).toMatchObject({ type: "array", minItems: 1 });
    const c = final.choices[0]!;
    expect(c.finish_reason).toBe("tool_calls");
    expect((c.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function.name).toBe("get_weather");
  });

  it("auto tool choice on a model without a tool parser is a 400 naming the field", async () => {
    const gw = await start();
    const res = await gw.fetch("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: say("hi"), tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "nope" } } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("tool_choice.function.name");
  });
});

describe("reasoning on VllmEngine engines", () => {
  it("<think> text goes to reasoning (not reasoning_content, which vLLM no longer sends), streamed and not; include_reasoning false drops it", async () => {
    const gw = await start();
    const body = { model: MODEL, messages: say("<think>\nweigh it\n</think>\n\nThe answer."), max_tokens: 30, ...END };
    const whole = (await sdk(gw).chat.completions.create(body)) as unknown as { choices: { message: Record<string, unknown> }[] };
    expect(whole.choices[0]!.message).toMatchObject({ content: "\n\nThe answer.", reasoning: "\nweigh it\n" });
    expect(whole.choices[0]!.message).not.toHaveProperty("reasoning_content");
    const stream = await sdk(gw).chat.completions.create({ ...body, stream: true });
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as Record<string, unknown> | undefined;
      reasoning += (delta?.reasoning as string | undefined) ?? "";
      content += (delta?.content as string | undefined) ?? "";
    }
    expect(reasoning).toBe("\nweigh it\n");
    expect(content).toBe("\n\nThe answer.");
    const dropped = (await sdk(gw).chat.completions.create({ ...body, include_reasoning: false } as never)) as unknown as { choices: { message: Record<string, unknown> }[] };
    expect(dropped.choices[0]!.message.content).toBe("\n\nThe answer.");
    expect(dropped.choices[0]!.message.reasoning).toBeUndefined();
  });
});

describe("GET /admin/engines shows each model's parsers", () => {
  it("chosen from the name, then the bundle's model type once loaded; the config's choice wins", async () => {
    const config = await clusterConfig();
    const gw = adminGateway(config);
    const parsers = async () => ((await (await gw.admin("GET", "/admin/engines")).json()) as { parsers: Record<string, unknown> }).parsers;
    expect(await parsers()).toEqual({
      [MODEL]: {
        model_type: null,
        tokenizer_loaded: false,
        tool_parser: { name: "hermes", source: "model name", pattern: "qwen", available: true },
        reasoning_parser: { name: "qwen3", source: "model name", pattern: "qwen3", available: true },
      },
    });
    await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
    expect(await parsers()).toMatchObject({ [MODEL]: { model_type: "qwen3", tokenizer_loaded: true } });

    const configured = adminGateway({ ...config, models: { [MODEL]: { ...config.models[MODEL], tool_parser: "none", reasoning_parser: "deepseek_r1" } } });
    const body = (await (await configured.admin("GET", `/admin/engines?model=${encodeURIComponent(MODEL)}`)).json()) as { parsers: Record<string, unknown> };
    expect(body.parsers[MODEL]).toMatchObject({ tool_parser: { name: "none", source: "config" }, reasoning_parser: { name: "deepseek_r1", source: "config" } });
  });
});
