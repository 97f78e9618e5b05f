// How a Responses or Messages stream ends when its engine does not finish it (issue 29): a body
// that breaks off or ends before its final event gets the gateway's error event in the API's
// own shape, naming the engine; an in-band error event reaches the client as vLLM wrote it; a
// client that leaves cancels the engine's request.
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, post } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

type Relay = "native" | "inspect" | undefined;

async function start(relay: Relay): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  return testGateway(httpPairConfig(cluster, { sseRelay: relay }), { RESPONSES: env.RESPONSES });
}

const MESSAGES_BODY = { model: MODEL, max_tokens: 40, stream: true, messages: [{ role: "user", content: "a long story" }] };
// Responses streams are always read in JavaScript (the gateway rewrites their response
// objects); Messages streams take the model's sse_relay: native by default.
const APIS = [
  { api: "responses", path: "/v1/responses", body: { model: MODEL, input: "a long story", max_output_tokens: 40, stream: true }, relay: undefined as Relay },
  { api: "messages (sse_relay native, the default)", path: "/v1/messages", body: MESSAGES_BODY, relay: undefined as Relay },
  { api: "messages (sse_relay inspect)", path: "/v1/messages", body: MESSAGES_BODY, relay: "inspect" as Relay },
] as const;

/** The last SSE event of a body: its event name and parsed data. */
function lastEvent(text: string): { event: string | undefined; data: Record<string, unknown> } {
  const blocks = text.trim().split(/\n\n/);
  const block = blocks.at(-1)!;
  const event = /^event: (.*)$/m.exec(block)?.[1];
  const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as Record<string, unknown>;
  return { event, data };
}

describe.each(APIS)("$api stream endings", ({ api, path, body, relay }) => {
  it("a body that breaks off: the gateway's error event naming the decode engine", async () => {
    const gw = await start(relay);
    await cluster!.setFaults("decode", { failMidStream: { afterTokens: 3, code: "internal", sse: "reset" } });
    const r = await post(gw, path, body);
    expect(r.status).toBe(200);
    const last = lastEvent(await r.text());
    if (api !== "responses") {
      expect(last.event).toBe("error");
      expect(last.data).toMatchObject({ type: "error", error: { type: "api_error" } });
      expect((last.data.error as { message: string }).message).toContain("decode engine 'decode'");
    } else {
      expect(last.data).toMatchObject({ error: { code: "decode_stream_error" } });
      expect((last.data.error as { message: string }).message).toContain("decode engine 'decode'");
    }
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "decode_stream_error" }]);
    await expectNoPinnedBlocks(cluster!);
  });

  it("a body that ends before the final event: the gateway's error event", async () => {
    const gw = await start(relay);
    await cluster!.setFaults("decode", { failMidStream: { afterTokens: 3, code: "internal", sse: "no-done" } });
    const r = await post(gw, path, body);
    const text = await r.text();
    expect(text).toContain("the stream ended before its final event");
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "decode_stream_error" }]);
  });

  it("an in-band error event goes to the client as the engine wrote it, and ends the stream", async () => {
    const gw = await start(relay);
    await cluster!.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "engine fell over" } });
    const r = await post(gw, path, body);
    const last = lastEvent(await r.text());
    expect(JSON.stringify(last.data)).toContain("engine fell over");
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "decode_stream_error", streaming: true }]);
    await expectNoPinnedBlocks(cluster!);
  });

  it("a client that leaves mid-stream cancels the engine's request", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 40, perBlockPullMs: 0.01 } }) });
    const gw = testGateway(httpPairConfig(cluster, { sseRelay: relay }), { RESPONSES: env.RESPONSES });
    // Messages has no ignore_eos: the engine's EOS comes after 200 tokens (8 s) on both APIs.
    await cluster.setFaults("decode", { eosAfter: 200 });
    const long = { ...body, ...(api === "responses" ? { max_output_tokens: 200 } : { max_tokens: 200 }) };
    const reader = (await post(gw, path, long)).body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    await expect
      .poll(async () => {
        const s = await cluster!.stats("decode");
        return [s.activeRequests, s.streamsCancelled];
      }, { timeout: 5_000 })
      .toEqual([0, 1]);
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled", streaming: true }]);
    await expectNoPinnedBlocks(cluster!);
  });
});
