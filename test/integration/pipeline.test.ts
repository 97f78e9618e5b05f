// The one pipeline's lifecycle, the same on both surfaces (issue 13): per-leg timeouts over
// OpenAI HTTP too, a fresh engine-side request id per retry, 429 as capacity pushback (never
// a breaker failure), and a garbled engine answer retried as an engine failure.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { httpPairConfig, httpPairSpecs, MODEL, openaiReceived } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const PROMPT = "the one pipeline under test";

function chat(extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return new Request("http://gateway.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 4, ...extra }),
  });
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

describe("per-leg timeouts over OpenAI HTTP", () => {
  it("a hanging prefill engine: 504 prefill_timeout, its request closed, decode never contacted", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("prefill", { hang: true });
    const base = httpPairConfig(cluster);
    const gw = testGateway({ ...base, pd: { ...base.pd, prefill_timeout_ms: 200 } });
    const res = await gw.fetch(chat());
    expect(res.status).toBe(504);
    expect(await errorCode(res)).toBe("prefill_timeout");
    await gw.settle();
    // Over HTTP closing the connection is vLLM's abort: the engine's request ends.
    await eventually(async () => expect((await cluster!.stats("prefill")).activeRequests).toBe(0));
    expect((await cluster.stats("prefill")).streamsCancelled).toBe(1);
    expect((await cluster.stats("decode")).generateRequests).toBe(0);
    expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "prefill", status: 504 }]);
  });

  it("a decode engine that sends nothing: 504 decode_timeout, its request closed", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { hang: true });
    const base = httpPairConfig(cluster);
    const gw = testGateway({ ...base, pd: { ...base.pd, first_frame_timeout_ms: 200 } });
    const res = await gw.fetch(chat({ stream: true }));
    expect(res.status).toBe(504);
    expect(await errorCode(res)).toBe("decode_timeout");
    await gw.settle();
    await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(0));
    expect((await cluster.stats("decode")).streamsCancelled).toBe(1);
  });
});

describe("a retry is a new engine request", () => {
  it("VllmEngine surface: attempt 2 carries <id>-2 on both legs", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code: "unavailable", message: "blip" }, count: 1 });
    const gw = testGateway({ ...pairConfig(cluster), retry: { initial_backoff_ms: 1 } });
    const out = await generate(gw, { requestId: "fresh", input: { case: "text", value: PROMPT } });
    expect(out.error).toBeUndefined();
    const ids = async (engine: string) => (await cluster!.stats(engine)).recent.filter((r) => r.method === "Generate").map((r) => r.requestId);
    expect(await ids("prefill")).toEqual(["fresh", "fresh-2"]);
    expect(await ids("decode")).toEqual(["fresh-2"]);
  });

  it("OpenAI surface: attempt 2 carries <x-request-id>-2 on both legs", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code: "unavailable", httpStatus: 503, message: "blip" }, count: 1 });
    const base = httpPairConfig(cluster, { retries: true });
    const gw = testGateway(base);
    const res = await gw.fetch(chat({}, { "x-request-id": "oa-fresh" }));
    expect(res.status).toBe(200);
    await res.text();
    expect((await openaiReceived(cluster, "prefill")).map((r) => r.requestId)).toEqual(["oa-fresh", "oa-fresh-2"]);
    expect((await openaiReceived(cluster, "decode")).map((r) => r.requestId)).toEqual(["oa-fresh-2"]);
  });
});

it("429 is capacity pushback: retried, counted by no breaker", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  await cluster.setFaults("prefill", { failStart: { code: "resource_exhausted", httpStatus: 429, message: "full" }, count: 6 });
  const gw = testGateway({ ...httpPairConfig(cluster), breaker: { failure_threshold: 2, timeout_secs: 60 } });
  for (let i = 0; i < 6; i++) expect((await gw.fetch(chat())).status).toBe(429);
  // Six 429s in a row against a threshold of 2: the breaker is still closed, so the engine
  // gets the next request instead of a 503 no_healthy_engine.
  expect(gw.isolate.breakers.state("prefill")?.state ?? "closed").toBe("closed");
  const ok = await gw.fetch(chat());
  expect(ok.status).toBe(200);
  await ok.text();
  await gw.settle();
  expect(gw.metrics.ofType("breaker_transition")).toEqual([]);
  expect(gw.metrics.ofType("engine_outcome").filter((e) => e.leg === "prefill").map((e) => e.status)).toEqual([429, 429, 429, 429, 429, 429, 200]);
});

it.each(["truncated", "garbage"] as const)("a %s engine answer is an engine failure: retried, counted, never invalid_argument", async (kind) => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { malformedResponse: kind, count: 1 });
  const gw = testGateway({ ...pairConfig(cluster), retry: { initial_backoff_ms: 1 } });
  const out = await generate(gw, { requestId: `mal-${kind}`, input: { case: "text", value: PROMPT } });
  expect(out.error).toBeUndefined();
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 502], ["prefill", 200], ["decode", 200]]);
});
