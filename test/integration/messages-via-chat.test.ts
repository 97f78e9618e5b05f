// The Anthropic Messages API on a model only VllmEngine engines serve (issue 29): converted to
// the gateway's chat path (Qwen3 template, PD over gRPC), read by the official @anthropic-ai/sdk.
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";

const QWEN = "Qwen/Qwen3-0.6B";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function grpcGateway(): Promise<TestGateway> {
  cluster = await startTestCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: QWEN, port: 0, latency: FAST },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: QWEN, port: 0, latency: FAST },
    ],
  });
  return testGateway({
    models: { [QWEN]: { prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: "connect" }], decode: [{ name: "decode", url: cluster.url("decode"), transport: "grpc-web" }] } },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  });
}

const sdk = (gw: TestGateway) => new Anthropic({ baseURL: "http://gateway.test", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });

describe("Messages on VllmEngine engines (through the gateway's chat path)", () => {
  it("messages.create: the sim's words as a text block, one prefill and one decode", async () => {
    const gw = await grpcGateway();
    const m = await sdk(gw).messages.create({ model: QWEN, system: "be brief", messages: [{ role: "user", content: "<sim-say>Hello from the edge!§</sim-say>" }], max_tokens: 40, stop_sequences: ["§"] });
    expect(m.type).toBe("message");
    expect(m.content[0]).toMatchObject({ type: "text" });
    expect(JSON.stringify(m.content)).toContain("Hello from the edge!");
    expect(["end_turn", "stop_sequence", "max_tokens"]).toContain(m.stop_reason);
    expect(m.usage.input_tokens).toBeGreaterThan(5);
    expect((await generatesReceived(cluster!, "prefill")).length).toBe(1);
    expect((await generatesReceived(cluster!, "decode")).length).toBe(1);
  });

  it("messages.stream: finalMessage assembles the text from the events", async () => {
    const gw = await grpcGateway();
    const final = await sdk(gw).messages.stream({ model: QWEN, messages: [{ role: "user", content: "<sim-say>one two three§</sim-say>" }], max_tokens: 20, stop_sequences: ["§"] }).finalMessage();
    expect(JSON.stringify(final.content)).toContain("one two three");
    expect(final.stop_reason).not.toBeNull();
  });

  it("count_tokens: exactly the ids the engine received for the same conversation", async () => {
    const gw = await grpcGateway();
    const messages = [{ role: "user" as const, content: "<sim-say>hi§</sim-say>" }];
    const count = await sdk(gw).messages.countTokens({ model: QWEN, system: "sys", messages });
    const m = await sdk(gw).messages.create({ model: QWEN, system: "sys", messages, max_tokens: 8 });
    expect(count.input_tokens).toBe(m.usage.input_tokens);
    expect(count.input_tokens).toBeGreaterThan(3);
    const sent = (await generatesReceived(cluster!, "decode")).at(-1)!.tokenized as { inputIds?: unknown[]; input_ids?: unknown[] };
    expect(count.input_tokens).toBe((sent.inputIds ?? sent.input_ids)!.length);
  });

  it("an unsupported block: Anthropic's error shape", async () => {
    const gw = await grpcGateway();
    const r = await gw.fetch("http://gateway.test/v1/messages", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: QWEN, max_tokens: 4, messages: [{ role: "user", content: [{ type: "image", source: {} }] }] }) });
    expect(r.status).toBe(400);
    expect((await r.json()) as Json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });

  // The sim speaks the script, then stops at its natural length for the prompt (Messages has
  // no ignore_eos); "§" ends the script first, so the reply is the script whatever that length.
  const WEATHER: Anthropic.Tool[] = [{ name: "get_weather", description: "Weather now", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
  const callScript = '<sim-say><tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>§</sim-say>';

  it("tool use: a tool_use block with its input, stop_reason tool_use, streamed and not; the tool_result turn renders", async () => {
    const gw = await grpcGateway();
    const body = { model: QWEN, messages: [{ role: "user" as const, content: callScript }], tools: WEATHER, max_tokens: 60, stop_sequences: ["§"] };
    const m = await sdk(gw).messages.create(body);
    const final = await sdk(gw).messages.stream(body).finalMessage();
    for (const r of [m, final]) {
      expect(r.stop_reason).toBe("tool_use");
      const use = r.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
      expect(use).toMatchObject({ name: "get_weather", input: { city: "Paris" } });
      expect(JSON.stringify(r.content)).not.toContain("<tool_call>");
    }
    const use = m.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    const next = await sdk(gw).messages.create({
      model: QWEN,
      tools: WEATHER,
      max_tokens: 4,
      messages: [{ role: "user", content: callScript }, { role: "assistant", content: m.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18C" }] }],
    });
    expect(next.type).toBe("message");
    const sent = (await generatesReceived(cluster!, "decode")).at(-1)!.tokenized as { originalText?: string; original_text?: string };
    const prompt = sent.originalText ?? sent.original_text;
    expect(prompt).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>');
  });

  it("thinking: a thinking block before the text, streamed as thinking_delta", async () => {
    const gw = await grpcGateway();
    const body = { model: QWEN, messages: [{ role: "user" as const, content: "<sim-say>weigh it</think>\n\nDone.§</sim-say>" }], max_tokens: 40, stop_sequences: ["§"], thinking: { type: "enabled" as const, budget_tokens: 1024 } };
    const m = await sdk(gw).messages.create(body);
    expect(m.content[0]).toMatchObject({ type: "thinking", thinking: "weigh it" });
    // The blank lines after </think> stay in the text, as vLLM's qwen3 parser keeps them.
    expect(m.content[1]).toMatchObject({ type: "text", text: "\n\nDone." });
    const thinking: string[] = [];
    const stream = sdk(gw).messages.stream(body).on("thinking", (delta) => thinking.push(delta));
    const final = await stream.finalMessage();
    expect(thinking.join("")).toBe("weigh it");
    expect(final.content.map((b) => b.type)).toEqual(["thinking", "text"]);
  });
});
