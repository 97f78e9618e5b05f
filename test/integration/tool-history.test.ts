// An agent's next turn on a VllmEngine model (issue 28 item 6): the assistant message with
// content null and tool_calls, then the tool results, sent through the official openai SDK.
// The prompt the engine receives is the golden render of the same chat (test/fixtures/chat:
// Jinja2 over vLLM's own rebuilding of the messages, in Python), so the gateway builds the
// prompt `vllm serve` would.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import cases from "../fixtures/chat/cases.json";
import golden from "../fixtures/chat/golden.json";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";

const MODEL = "Qwen/Qwen3-0.6B";
let cluster: TestCluster;
let gw: TestGateway;

beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: MODEL, port: 0, latency: FAST },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: MODEL, port: 0, latency: FAST },
    ],
  });
  gw = testGateway({
    models: { [MODEL]: { prefill: [{ name: "prefill", url: cluster.url("prefill") }], decode: [{ name: "decode", url: cluster.url("decode") }] } },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  });
});
afterAll(async () => {
  await cluster?.close();
});

const sdk = () => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });

interface ChatCase {
  name: string;
  messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[];
  tools?: OpenAI.Chat.Completions.ChatCompletionTool[];
  kwargs?: Record<string, unknown>;
}
const renders = golden.renders as Record<string, { text?: string }>;

/** The prompt text the decode engine was sent for the last request. */
async function lastPrompt(): Promise<string> {
  const sent = await generatesReceived(cluster, "decode");
  const tokenized = sent.at(-1)!.tokenized as { originalText?: string; original_text?: string };
  return tokenized.originalText ?? tokenized.original_text ?? "";
}

describe("tool-call histories reach the engine as vLLM renders them", () => {
  const agentCases = (cases.cases as unknown as (ChatCase & { vllm?: boolean; config?: string })[]).filter((c) => c.vllm && !c.config);
  it("has the agent histories to send", () => expect(agentCases.length).toBeGreaterThanOrEqual(9));
  for (const c of agentCases) {
    it(c.name, async () => {
      const r = await sdk().chat.completions.create({
        model: MODEL,
        messages: c.messages,
        ...(c.tools ? { tools: c.tools } : {}),
        ...(c.kwargs ? { chat_template_kwargs: c.kwargs } : {}),
        max_tokens: 4,
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      expect(r.choices[0]!.message.role).toBe("assistant");
      expect(await lastPrompt()).toBe(renders[c.name]!.text);
    });
  }

  it("the SDK's own next turn: a reply's tool_calls sent back with content null, then the result", async () => {
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const say = '<sim-say><tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>§</sim-say>';
    const first = await sdk().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: say }], tools, max_tokens: 40, stop: ["§"], ignore_eos: true } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    const reply = first.choices[0]!.message;
    expect(reply.content).toBeNull();
    const call = reply.tool_calls![0]!;
    const next = await sdk().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: say }, reply, { role: "tool", tool_call_id: call.id, content: "18C" }], tools, max_tokens: 4 });
    expect(next.choices[0]!.finish_reason).toBeDefined();
    expect(await lastPrompt()).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
  });
});
