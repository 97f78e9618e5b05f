// Aggregated (non-PD) mode: a model with only `regular` openai-http engines is proxied to one
// engine, streamed unbuffered, with the engine_* error codes.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, leaveAfterTwoChunks, openai, openaiReceived, post } from "./openai-fixtures.js";

const MODEL = "agg";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(latency = FAST, url?: string, sseRelay?: "inspect" | "native") {
  cluster = await startTestCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: MODEL, port: 0, latency }] });
  const relay = sseRelay ? { sse_relay: sseRelay } : {};
  return testGateway({ models: { [MODEL]: { regular: [{ name: "engine", url: url ?? cluster.url("engine"), transport: "openai-http" }], ...relay } }, retry: { disabled: true } });
}

it.each([false, true])("proxies chat (stream=%s, n=2) to one engine, no PD header", async (stream) => {
  const gw = await start();
  const client = openai(gw, { "x-request-id": "agg-1" });
  const indexes = new Set<number>();
  let headers: Headers;
  if (stream) {
    const { data, response } = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi there" }], n: 2, max_tokens: 4, stream: true }).withResponse();
    headers = response.headers;
    for await (const c of data) c.choices.forEach((x) => indexes.add(x.index));
  } else {
    const { data, response } = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi there" }], n: 2, max_tokens: 4 }).withResponse();
    headers = response.headers;
    data.choices.forEach((x) => indexes.add(x.index));
    expect(data.usage).toBeDefined();
  }
  expect([...indexes].sort()).toEqual([0, 1]);
  expect(headers.get("x-pd-prefill")).toBeNull();
  expect(headers.get("x-request-id")).toBe("agg-1");
  const [r] = await openaiReceived(cluster!, "engine");
  expect(r!.requestId).toBe("agg-1");
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "regular", engine: "engine", status: 200 }]);
  expect(gw.metrics.ofType("pd_decision")).toHaveLength(0);
  expect(gw.metrics.ofType("request")).toMatchObject([{ backend: "regular", status: 200, streaming: stream }]);
});

it("the client's own kv_transfer_params are dropped, everything else forwarded as sent", async () => {
  const gw = await start();
  const body = '{"model":"agg",  "prompt":"hi", "max_tokens":2, "kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.9.9.9"}, "x_extra":[1]}';
  const res = await post(gw, "/v1/completions", body);
  expect(res.status).toBe(200);
  const [r] = await openaiReceived(cluster!, "engine");
  expect(r!.body).toEqual({ model: "agg", prompt: "hi", max_tokens: 2, x_extra: [1] });
});

it.each([
  [503, "unavailable", "engine_unavailable", 503],
  [400, "invalid_argument", "engine_bad_request", 400],
  [429, "resource_exhausted", "engine_error", 500],
])("engine answers %i -> %s", async (httpStatus, code, gatewayCode, status) => {
  const gw = await start();
  await cluster!.setFaults("engine", { failStart: { code, httpStatus, message: "nope" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x", max_tokens: 2 });
  expect(res.status).toBe(status);
  expect(res.headers.get("x-gateway-error-code")).toBe(gatewayCode);
  expect(((await res.json()) as { error: { message: string } }).error.message).toBe("nope (engine 'engine')");
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "regular", status: httpStatus }]);
});

it("transport error -> 502 engine_request_failed", async () => {
  const gw = await start(FAST, "http://127.0.0.1:1");
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x" });
  expect(res.status).toBe(502);
  expect(res.headers.get("x-gateway-error-code")).toBe("engine_request_failed");
});

it("mid-stream failure (sse_relay inspect) -> one final engine_stream_error event", async () => {
  const gw = await start(FAST, undefined, "inspect");
  await cluster!.setFaults("engine", { failMidStream: { afterTokens: 1, code: "internal", message: "gone" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y", max_tokens: 6, ignore_eos: true, stream: true });
  const events = (await res.text()).split("\n\n").filter(Boolean);
  expect(JSON.parse(events.at(-1)!.slice(6))).toEqual({ error: { message: "gone (engine 'engine')", type: "server_error", param: null, code: "engine_stream_error" } });
});

it("mid-stream failure (the native default) -> vLLM's own error event and [DONE]; metrics name the failure", async () => {
  const gw = await start();
  await cluster!.setFaults("engine", { failMidStream: { afterTokens: 1, code: "internal", message: "gone" } });
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y", max_tokens: 6, ignore_eos: true, stream: true });
  const events = (await res.text()).split("\n\n").filter(Boolean);
  expect(events.at(-1)).toBe("data: [DONE]");
  expect(JSON.parse(events.at(-2)!.slice(6))).toMatchObject({ error: { message: "gone", code: 500 } });
  await gw.settle();
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 500, errorCode: "engine_stream_error", streaming: true }]);
});

it("client abort mid-stream closes the engine's request", async () => {
  const gw = await start({ ...FAST, perOutputTokenMs: 40 });
  await leaveAfterTwoChunks(gw, MODEL);
  await eventually(async () => {
    const s = await cluster!.stats("engine");
    expect(s.streamsCancelled).toBe(1);
    expect(s.activeRequests).toBe(0);
  });
});
