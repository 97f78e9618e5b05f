// The Responses API over the gateway's chat path (issue 29): for a model served only by
// VllmEngine engines (the gateway tokenizes chat, renders the Qwen3 template, runs the PD
// pipeline over gRPC) and for an openai-http model configured `apis_via_chat`. The official
// `openai` SDK reads the response object and the streamed events; the conversation is stored
// and continued as on the native path.
import { env } from "cloudflare:workers";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, expectNoPinnedBlocks, generatesReceived } from "../support/pd-fixtures.js";
import { httpPairConfig, httpPairSpecs, MODEL as HTTP_MODEL, openaiReceived } from "./openai-fixtures.js";

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
  return grpcGatewayOf(cluster);
}

/** A gateway instance of its own (another isolate: no memory shared) on the cluster. */
function grpcGatewayOf(cluster: TestCluster): TestGateway {
  return testGateway(
    {
      models: { [QWEN]: { prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: "connect" }], decode: [{ name: "decode", url: cluster.url("decode"), transport: "grpc-web" }] } },
      pd: { engine_info_ttl_ms: 0 },
      retry: { disabled: true },
    },
    { RESPONSES: env.RESPONSES },
  );
}

const sdk = (gw: TestGateway) => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });

describe("Responses on VllmEngine engines (through the gateway's chat path)", () => {
  it("not streamed: the sim's words as output_text, the prefill leg ran and handed off, usage in Responses' shape", async () => {
    const gw = await grpcGateway();
    const { data, response } = await sdk(gw).responses.create({ model: QWEN, instructions: "be brief", input: "<sim-say>Hello from the edge!</sim-say>", max_output_tokens: 40 }).withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(data.id).toMatch(/^resp_/);
    expect(data.output_text).toContain("Hello from the edge!");
    // Length-capped is "incomplete" with the reason, as OpenAI's API says it.
    expect(data.status === "completed" || data.incomplete_details?.reason === "max_output_tokens").toBe(true);
    expect(data.usage!.input_tokens).toBeGreaterThan(5);
    expect(data.usage!.output_tokens).toBeGreaterThan(0);
    expect((await generatesReceived(cluster!, "prefill")).length).toBe(1);
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);
  });

  it("streamed: the SDK assembles the same text from the events; a follow-up turn on another isolate continues it", async () => {
    const gw = await grpcGateway();
    const stream = sdk(gw).responses.stream({ model: QWEN, input: "<sim-say>one two three</sim-say>", max_output_tokens: 12 });
    const types: string[] = [];
    stream.on("event", (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(final.output_text).toContain("one two three");
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(-4, -1)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done"]);
    expect(types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    await gw.settle();
    const next = await sdk(grpcGatewayOf(cluster!)).responses.create({ model: QWEN, input: "<sim-say>four</sim-say>", previous_response_id: final.id, max_output_tokens: 8 });
    expect(next.previous_response_id).toBe(final.id);
    // The second prompt holds the first turn (its words and the reply) before the new input.
    const text = JSON.stringify((await generatesReceived(cluster!, "decode")).at(-1));
    expect(text.indexOf("one two three")).toBeGreaterThanOrEqual(0);
    expect(text.indexOf("four")).toBeGreaterThan(text.indexOf("one two three"));
  });

  it("a model an engine cannot serve: the chat path's 400 naming the field", async () => {
    const gw = await grpcGateway();
    const r = await gw.fetch("http://gateway.test/v1/responses", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: QWEN, input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }) });
    expect(r.status).toBe(400);
    expect(((await r.json()) as Json).error).toMatchObject({ code: "unsupported_parameter", param: "input[0].content[0]" });
  });
});

describe("Responses on openai-http engines with apis_via_chat", () => {
  it("goes to the engines' /v1/chat/completions, and answers in Responses' shape", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const base = httpPairConfig(cluster);
    (base.models[HTTP_MODEL] as Json).apis_via_chat = true;
    const gw = testGateway(base, { RESPONSES: env.RESPONSES });
    const r = await sdk(gw).responses.create({ model: HTTP_MODEL, input: "hello", max_output_tokens: 4 });
    expect(r.object).toBe("response");
    expect(r.output_text.length).toBeGreaterThan(0);
    const got = await openaiReceived(cluster, "decode");
    expect(got.map((x) => x.method)).toEqual(["/v1/chat/completions"]);
    expect(got[0]!.body).toMatchObject({ max_tokens: 4, messages: [{ role: "user", content: "hello" }] });
  });
});
