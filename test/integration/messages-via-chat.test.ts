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
  });

  it("an unsupported block: Anthropic's error shape", async () => {
    const gw = await grpcGateway();
    const r = await gw.fetch("http://gateway.test/v1/messages", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: QWEN, max_tokens: 4, messages: [{ role: "user", content: [{ type: "image", source: {} }] }] }) });
    expect(r.status).toBe(400);
    expect((await r.json()) as Json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });
});
