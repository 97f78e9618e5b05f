// sse_relay: "native" (a model's SSE streams handed to the runtime untouched): the OpenAI SDK
// reads the same stream, metrics carry TTFT only, a client that leaves still closes the
// engine's request, and the PD path relays the handoff as before.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, httpPairConfig, httpPairSpecs, leaveAfterTwoChunks, MODEL, openai } from "./openai-fixtures.js";

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

it("a streamed PD completion: the SDK reads every token and the usage; metrics have TTFT, no TPOT", async () => {
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
  expect(done).toMatchObject({ surface: "openai", outputTokens: 0 });
  expect(done!.ttftMs).toBeGreaterThanOrEqual(0);
  expect(done!.tpotMs).toBeUndefined();
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
