// Through the Worker to an openai-http engine (the sim's `vllm serve --tool-call-parser hermes
// --enable-auto-tool-choice --reasoning-parser qwen3`): the gateway passes tools,
// response_format and logprobs through, and the official SDK sees vLLM's shapes, streamed and not.
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, openai, openaiReceived } from "./openai-fixtures.js";

const MODEL = "tools-http";
let cluster: TestCluster;
let gw: TestGateway;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [{ name: "engine", role: "both", kvConnector: "none", model: MODEL, port: 0, latency: FAST, toolCallParser: "hermes", enableAutoToolChoice: true, reasoningParser: "qwen3" }],
  });
  gw = testGateway({ models: { [MODEL]: { regular: [{ name: "engine", url: cluster.url("engine"), transport: "openai-http" }] } }, retry: { disabled: true } });
});
afterAll(async () => {
  await cluster?.close();
});

const TOOLS: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const REPLY = '<think>Weather needed.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>§';
const body = { model: MODEL, messages: [{ role: "user" as const, content: `<sim-say>${REPLY}</sim-say>` }], max_tokens: 200, ignore_eos: true, stop: ["§"], tools: TOOLS, logprobs: true, top_logprobs: 1 };

describe("tools, reasoning and logprobs pass through to vLLM's parsers", () => {
  it("non-streamed: tool_calls, reasoning, finish_reason tool_calls, logprobs", async () => {
    const r = await openai(gw).chat.completions.create(body);
    const ch = r.choices[0]!;
    expect(ch.finish_reason).toBe("tool_calls");
    expect((ch.message as Json).reasoning).toBe("Weather needed.");
    expect(ch.message.tool_calls).toEqual([{ id: expect.stringMatching(/^chatcmpl-tool-/), type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }]);
    expect(ch.logprobs!.content!.map((t) => t.token).join("")).toBe(REPLY);
    const [sent] = await openaiReceived(cluster, "engine");
    expect(sent!.body).toMatchObject({ tools: TOOLS, logprobs: true, top_logprobs: 1 });
  });

  it("streamed: reasoning and tool_call deltas, finish_reason tool_calls", async () => {
    const stream = await openai(gw).chat.completions.create({ ...body, stream: true });
    let reasoning = "";
    let args = "";
    const names: string[] = [];
    const finish: string[] = [];
    for await (const c of stream) {
      for (const ch of c.choices) {
        reasoning += (ch.delta as Json).reasoning ?? "";
        for (const tc of ch.delta.tool_calls ?? []) {
          if (tc.function?.name) names.push(tc.function.name);
          args += tc.function?.arguments ?? "";
        }
        if (ch.finish_reason) finish.push(ch.finish_reason);
      }
    }
    expect({ reasoning, names, args: JSON.parse(args) as unknown, finish }).toEqual({ reasoning: "Weather needed.", names: ["get_weather"], args: { city: "Paris" }, finish: ["tool_calls"] });
  });

  it("response_format json_schema: the content conforms", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const r = await openai(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 50, response_format: { type: "json_schema", json_schema: { name: "c", schema } } });
    expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ city: "sim" });
  });
});
