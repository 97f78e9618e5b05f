// OpenAI HTTP engines: once the isolate knows the model's max_model_len (GET /v1/models,
// learned in the background), what vLLM would refuse is refused before any engine work.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { httpPairConfig, httpPairSpecs, MODEL, openaiReceived } from "./openai-fixtures.js";
import { MAX_CONTEXT } from "../../sim/spec.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const post = (gw: ReturnType<typeof testGateway>, route: string, body: unknown) =>
  gw.fetch(`http://gateway.test${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function warmed() {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  const gw = testGateway(httpPairConfig(cluster));
  // The first request is served as usual; it also teaches the isolate the context length.
  const first = await post(gw, "/v1/completions", { model: MODEL, prompt: "hello there", max_tokens: 4 });
  expect(first.status).toBe(200);
  await first.arrayBuffer();
  await gw.settle(); // the background GET /v1/models
  return { gw, cluster };
}

it.each([
  ["token-id prompt + max_tokens beyond the context", "/v1/completions", { prompt: Array.from({ length: 100 }, (_, i) => 100 + i), max_tokens: MAX_CONTEXT - 50 }, "max_tokens", /prompt has 100 tokens and max_tokens asks for 32718/],
  ["a batch of token-id prompts: the longest counts", "/v1/completions", { prompt: [[1, 2], Array.from({ length: 300 }, () => 7)], max_tokens: MAX_CONTEXT - 299 }, "max_tokens", /prompt has 300 tokens/],
  ["a token-id prompt that fills the context alone", "/v1/completions", { prompt: Array.from({ length: MAX_CONTEXT }, () => 7), max_tokens: 1 }, "prompt", /leaving no room for output/],
  ["a text prompt with max_tokens filling the context", "/v1/completions", { prompt: "short", max_tokens: MAX_CONTEXT }, "max_tokens", /max_tokens asks for 32768, which leaves no room for the prompt/],
  ["chat: max_completion_tokens filling the context", "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_completion_tokens: MAX_CONTEXT + 5 }, "max_completion_tokens", /max_completion_tokens asks for 32773/],
])("%s (%s) -> 400 context_length_exceeded naming the field; no engine sees it", async (_name, route, body, param, message) => {
  const { gw, cluster: c } = await warmed();
  const before = [(await openaiReceived(c, "prefill")).length, (await openaiReceived(c, "decode")).length];
  const res = await post(gw, route, { model: MODEL, ...body });
  expect(res.status).toBe(400);
  const err = ((await res.json()) as { error: { code: string; param: string; message: string } }).error;
  expect(err).toMatchObject({ code: "context_length_exceeded", param });
  expect(err.message).toMatch(message);
  expect([(await openaiReceived(c, "prefill")).length, (await openaiReceived(c, "decode")).length]).toEqual(before);
});

it("a text prompt whose output cap leaves room goes to the engines, which check it themselves", async () => {
  const { gw, cluster: c } = await warmed();
  const before = (await openaiReceived(c, "prefill")).length;
  const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "short", max_tokens: 4 });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  expect((await openaiReceived(c, "prefill")).length).toBe(before + 1);
});
