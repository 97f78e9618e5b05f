// sse_relay: "native" (the default: a model's SSE streams handed to the runtime untouched, a
// copy watched behind them): the OpenAI SDK reads the same stream, metrics still carry the
// tokens, usage and TPOT, an engine's error mid-stream reaches the client as vLLM wrote it and
// is recorded, a body that breaks off or ends without [DONE] gets the gateway's error event
// (as with "inspect"), a client that leaves still closes the engine's request, and the PD path
// relays the handoff.
import { APIError } from "openai";
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, FAST, httpPairConfig, httpPairSpecs, leaveAfterTwoChunks, MODEL, openai, post } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(latency = FAST) {
  cluster = await startTestCluster({ engines: httpPairSpecs({ latency }, { latency }) });
  const config = httpPairConfig(cluster);
  (config.models[MODEL] as Record<string, unknown>).sse_relay = "native";
  return testGateway(config);
}

it("a streamed PD completion: the SDK reads every token and the usage; metrics have TTFT, TPOT and the tokens", async () => {
  const gw = await start();
  const { data, response } = await openai(gw)
    .completions.create({ model: MODEL, prompt: "native relay please", max_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true } } as never)
    .withResponse();
  let text = "";
  let usage: { completion_tokens: number } | undefined;
  for await (const c of data as unknown as AsyncIterable<{ choices: { text: string }[]; usage?: { completion_tokens: number } }>) {
    text += c.choices.map((x) => x.text).join("");
    if (c.usage) usage = c.usage;
  }
  expect(response.headers.get("x-pd-prefill")).toBe("ran");
  expect(text.length).toBeGreaterThan(0);
  expect(usage?.completion_tokens).toBe(6);
  await gw.settle();
  const [done] = gw.metrics.ofType("stream_complete");
  expect(done).toMatchObject({ surface: "openai", outputTokens: 6, inputTokens: expect.any(Number) });
  expect(done!.ttftMs).toBeGreaterThanOrEqual(0);
  expect(done!.tpotMs).toBeGreaterThan(0);
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 200, streaming: true }]);
});

it("a client that leaves mid-stream closes the decode engine's request", async () => {
  const gw = await start({ ...FAST, perOutputTokenMs: 40 });
  await leaveAfterTwoChunks(gw, MODEL);
  await eventually(async () => {
    const s = await cluster!.stats("decode");
    expect(s.activeRequests).toBe(0);
    expect(s.blocksPinned).toBe(0);
  });
  expect((await cluster!.stats("prefill")).blocksPinned).toBe(0);
});

it("a client whose body is cancelled with no signal (the runtime's hook) still closes the decode engine's request", async () => {
  const gw = await start({ ...FAST, perOutputTokenMs: 40 });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "long", max_tokens: 200, ignore_eos: true, stream: true });
  const reader = res.body!.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel();
  await eventually(async () => {
    const s = await cluster!.stats("decode");
    expect(s.activeRequests).toBe(0);
    expect(s.streamsCancelled).toBe(1);
  });
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled", streaming: true }]);
  await expectNoPinnedBlocks(cluster!);
});

// The watch reads behind the client: a client that closes on [DONE] may leave before the watch
// read it. The leg asks the copy first, so the stream is recorded as it ended.
it("a client that leaves on [DONE] before the body's end: recorded as completed, with its tokens", async () => {
  const gw = await start();
  await cluster!.setFaults("decode", { endLateMs: 300, leg: "decode", count: 1 });
  const client = new AbortController();
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "close on done", max_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true } }, { signal: client.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("data: [DONE]\n\n")) {
    const r = await reader.read();
    if (r.done) break;
    text += decoder.decode(r.value, { stream: true });
  }
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
  client.abort(); // the client leaves on [DONE], the engine's body still open
  await reader.cancel().catch(() => undefined);
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 200, streaming: true }]);
  expect(gw.metrics.ofType("stream_complete")).toMatchObject([{ outputTokens: 6 }]);
  await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(0));
});

it("decode fails mid-stream: the client gets vLLM's own error event, metrics record the failed stream", async () => {
  const gw = await start();
  await cluster!.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "mid" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y z", stream: true, max_tokens: 8, ignore_eos: true });
  expect(res.status).toBe(200);
  const events = (await res.text()).split("\n\n").filter((e) => e !== "");
  // As the engine wrote it (not the gateway's decode_stream_error event), then vLLM's [DONE].
  expect(events.at(-1)).toBe("data: [DONE]");
  expect(JSON.parse(events.at(-2)!.slice("data: ".length))).toMatchObject({ error: { message: "mid", code: 500 } });
  expect(events.slice(0, -2).every((e) => e.startsWith('data: {"id"'))).toBe(true);
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 500, errorCode: "decode_stream_error", streaming: true }]);
  expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  await expectNoPinnedBlocks(cluster!);

  // The SDK still throws from the iterator after the good chunks.
  await cluster!.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "mid again" } });
  let seen = 0;
  const err = await (async () => {
    const stream = await openai(gw).completions.create({ model: MODEL, prompt: "x y z", stream: true, max_tokens: 8, ignore_eos: true } as never);
    for await (const _ of stream as unknown as AsyncIterable<unknown>) seen++;
  })().catch((x: unknown) => x);
  expect(seen).toBeGreaterThan(0);
  expect(err).toBeInstanceOf(APIError);
  expect((err as APIError).message).toContain("mid again");
});

// The endings the watch behind the pipe cannot see in time to hold bytes back: the pipe leaves
// the client's body open (preventClose, preventAbort), so the gateway ends it with its own
// error event naming the engine, as the inspecting relay does.
it.each(["native", "inspect"] as const)("decode's body breaks off mid-stream (%s): the chunks sent, then the gateway's decode_stream_error event", async (relay) => {
  cluster = await startTestCluster({ engines: httpPairSpecs({ latency: FAST }, { latency: FAST }) });
  const gw = testGateway(httpPairConfig(cluster, { sseRelay: relay }));
  await cluster.setFaults("decode", { failMidStream: { afterTokens: 3, code: "internal", sse: "reset" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y z", stream: true, max_tokens: 8, ignore_eos: true });
  expect(res.status).toBe(200);
  const events = (await res.text()).split("\n\n").filter((e) => e !== "");
  const last = JSON.parse(events.at(-1)!.slice("data: ".length)) as { error: { message: string; code: string } };
  expect(last.error.code).toBe("decode_stream_error");
  expect(last.error.message).toMatch(/^Decode stream error: .+ \(decode engine 'decode'\)$/);
  expect(events.slice(0, -1).every((e) => e.startsWith('data: {"id"'))).toBe(true);
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "decode_stream_error", streaming: true }]);
  await expectNoPinnedBlocks(cluster);
});

it.each(["native", "inspect"] as const)("decode's body ends without [DONE] (%s): every chunk, then the gateway's decode_stream_error event", async (relay) => {
  cluster = await startTestCluster({ engines: httpPairSpecs({ latency: FAST }, { latency: FAST }) });
  const gw = testGateway(httpPairConfig(cluster, { sseRelay: relay }));
  await cluster.setFaults("decode", { failMidStream: { afterTokens: 3, code: "internal", sse: "no-done" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y z", stream: true, max_tokens: 8, ignore_eos: true });
  const events = (await res.text()).split("\n\n").filter((e) => e !== "");
  expect(events.length).toBeGreaterThanOrEqual(3);
  expect(events.slice(0, -1).every((e) => e.startsWith('data: {"id"'))).toBe(true);
  expect(events.at(-1)).toBe(
    `data: {"error":{"message":"Decode stream ended before [DONE] (decode engine 'decode')","type":"server_error","param":null,"code":"decode_stream_error"}}`,
  );
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "decode_stream_error", streaming: true }]);
});

it("the default relay is the native one: vLLM's error event reaches the client as it wrote it", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs({ latency: FAST }, { latency: FAST }) });
  const gw = testGateway(httpPairConfig(cluster));
  await cluster.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "mid" } });
  const text = await (await post(gw, "/v1/completions", { model: MODEL, prompt: "x y z", stream: true, max_tokens: 8, ignore_eos: true })).text();
  expect(text.endsWith(`data: ${JSON.stringify({ error: { message: "mid", type: "InternalServerError", param: null, code: 500 } })}\n\ndata: [DONE]\n\n`)).toBe(true);
});
