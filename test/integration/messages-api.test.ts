// The Anthropic Messages API through the Worker, with the official `@anthropic-ai/sdk`, over
// the HTTP PD path to sim vLLM servers (issue 29): the prefill leg is vLLM's /v1/messages capped
// to one token with the NIXL tag, its handoff relayed to decode; errors in Anthropic's shape.
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { tokenize } from "../../sim/tokens.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, NIXL_TAG, openaiReceived, post } from "./openai-fixtures.js";

const PROMPT = "the quick brown fox jumps over the lazy dog";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(config: Record<string, unknown> = {}, env: Record<string, unknown> = {}): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  return testGateway({ ...httpPairConfig(cluster), ...config }, env);
}

function anthropic(gw: TestGateway, apiKey = "x"): Anthropic {
  return new Anthropic({ baseURL: "http://gateway.test", apiKey, fetch: gw.fetch as never, maxRetries: 0 });
}

const messagesReceived = async (engine: string) => (await openaiReceived(cluster!, engine)).filter((r) => r.method === "/v1/messages");

describe("POST /v1/messages on openai-http engines", () => {
  it("not streamed: one capped prefill, the handoff relayed, Anthropic's message", async () => {
    const gw = await start();
    const { data, response } = await anthropic(gw)
      .messages.create({ model: MODEL, max_tokens: 6, system: "be brief", messages: [{ role: "user", content: PROMPT }], stop_sequences: ["zzz"] })
      .withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(data).toMatchObject({ type: "message", role: "assistant", model: MODEL });
    expect(data.content[0]).toMatchObject({ type: "text" });
    expect(["end_turn", "max_tokens", "stop_sequence"]).toContain(data.stop_reason);
    expect(data.usage.output_tokens).toBeGreaterThan(0);
    const [p] = await messagesReceived("prefill");
    const [d] = await messagesReceived("decode");
    expect(p!.body).toMatchObject({ max_tokens: 1, stream: false, kv_transfer_params: NIXL_TAG, system: "be brief" });
    expect((p!.body as Json).stop_sequences).toBeUndefined();
    expect(d!.body).toMatchObject({ max_tokens: 6, stop_sequences: ["zzz"] });
    expect((d!.body as Json).kv_transfer_params.remote_engine_id).toBe("prefill-eng");
    expect((await cluster!.stats("decode")).promptTokensComputed).toBe(0);
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);
  });

  it("streamed: the SDK assembles the message from the relayed events", async () => {
    const gw = await start();
    const stream = anthropic(gw).messages.stream({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content: PROMPT }] });
    const types: string[] = [];
    stream.on("streamEvent", (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(types).toContain("content_block_delta");
    expect(final.content[0]).toMatchObject({ type: "text" });
    expect(final.usage.output_tokens).toBe(5);
    await gw.settle();
    const [timing] = gw.metrics.ofType("stream_complete");
    expect(timing).toMatchObject({ surface: "anthropic", endpoint: "/v1/messages", outputTokens: 5 });
    expect(timing!.ttftMs).toBeGreaterThanOrEqual(0);
    expect(gw.metrics.ofType("request")).toMatchObject([{ surface: "anthropic", endpoint: "/v1/messages", backend: "pd", streaming: true, status: 200 }]);
    await expectNoPinnedBlocks(cluster!);
  });

  it("count_tokens: the engine's count of the rendered prompt", async () => {
    const gw = await start();
    const r = await anthropic(gw).messages.countTokens({ model: MODEL, messages: [{ role: "user", content: PROMPT }] });
    expect(r.input_tokens).toBeGreaterThanOrEqual(tokenize(PROMPT).length);
  });

  it("errors are Anthropic's shape: the SDK's error classes, the field named", async () => {
    const gw = await start();
    await expect(anthropic(gw).messages.create({ model: "nope", max_tokens: 5, messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const r = await post(gw, "/v1/messages", { model: MODEL, messages: [{ role: "user", content: "x" }] });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: is required" } });
    expect(r.headers.get("x-gateway-error-code")).toBe("invalid_request");
    const unknownRoute = await post(gw, "/v1/messages/nope", {});
    expect(((await unknownRoute.json()) as Json).type).toBe("error");
  });

  it("x-api-key is an API key; a missing one is Anthropic's 401", async () => {
    const gw = await start({ auth: { data_plane: "api_keys" } }, { API_KEYS: "k1" });
    const ok = await anthropic(gw, "k1").messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: "user", content: PROMPT }] });
    expect(ok.type).toBe("message");
    await expect(anthropic(gw, "wrong").messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: "user", content: PROMPT }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });
});
