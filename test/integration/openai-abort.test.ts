// Client disconnects on the OpenAI surface. Over HTTP vLLM aborts a request when its
// connection closes, so the gateway closes the leg in flight: at once, except for a decode leg
// that holds a KV handoff and has not sent its first chunk (ARCHITECTURE decision 5), which is
// closed after that chunk so the engine is never cancelled in the middle of its KV pull.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, FAST, httpPairConfig, httpPairSpecs, MODEL, openai } from "./openai-fixtures.js";

const PROMPT = "a client that will go away";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function received(engine: string) {
  await eventually(async () => {
    if ((await cluster!.stats(engine)).generateRequests < 1) throw new Error(`${engine} has no request yet`);
  });
}

it("abort mid-stream reaches the decode engine and leaves no pinned block", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs({}, { latency: { ...FAST, perOutputTokenMs: 40 } }) });
  const gw = testGateway(httpPairConfig(cluster));
  const controller = new AbortController();
  let chunks = 0;
  // The SDK ends the iteration quietly (or throws an abort error) once its signal fires.
  await (async () => {
    const stream = await openai(gw).chat.completions.create(
      { model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 200, ignore_eos: true, stream: true } as never,
      { signal: controller.signal },
    );
    for await (const _ of stream as unknown as AsyncIterable<unknown>) if (++chunks === 3) controller.abort();
  })().catch(() => undefined);
  // The native relay hands the SDK what the runtime holds at once, so it may parse a few more
  // events before it sees its signal; the engine was still generating (200 tokens at 40 ms).
  expect(chunks).toBeGreaterThanOrEqual(3);
  expect(chunks).toBeLessThan(100);
  await eventually(async () => {
    const d = await cluster!.stats("decode");
    expect(d.streamsCancelled).toBe(1);
    expect(d.activeRequests).toBe(0);
  });
  expect((await cluster.stats("decode")).decodeRequests).toBe(1);
  await eventually(() => expectNoPinnedBlocks(cluster!));
  await eventually(async () => expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled", streaming: true }]));
});

it("abort while prefill runs: prefill is cancelled at once, decode is never sent", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  await cluster.setFaults("prefill", { hang: true });
  const gw = testGateway(httpPairConfig(cluster));
  const controller = new AbortController();
  const done = openai(gw).completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, stream: true }, { signal: controller.signal }).catch((x: unknown) => x);
  await received("prefill");
  controller.abort();
  await done;
  await eventually(async () => {
    const p = await cluster!.stats("prefill");
    expect(p.streamsCancelled).toBe(1);
    expect(p.activeRequests).toBe(0);
  });
  await eventually(async () => expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled" }]));
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  expect(gw.metrics.ofType("engine_outcome")).toHaveLength(0);
  await expectNoPinnedBlocks(cluster);
});

it("abort while decode pulls the handoff: decode is closed only after its first chunk, so nothing leaks", async () => {
  // A slow KV pull (~300 ms) delays decode's first chunk; closing the connection mid-pull
  // would leave the prefill engine's blocks pinned until their lease expires.
  cluster = await startTestCluster({ engines: httpPairSpecs({}, { latency: { ...FAST, perOutputTokenMs: 50, perBlockPullMs: 300, pullSetupMs: 0 } }) });
  const gw = testGateway(httpPairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const controller = new AbortController();
  const done = openai(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 100, ignore_eos: true, stream: true } as never, { signal: controller.signal }).catch((x: unknown) => x);
  await received("decode");
  controller.abort();
  await done;
  await eventually(async () => {
    const d = await cluster!.stats("decode");
    expect(d.streamsCancelled).toBe(1);
    expect(d.activeRequests).toBe(0);
  });
  const d = await cluster.stats("decode");
  expect(d.abortsDuringPull).toBe(0);
  expect(d.kvPullsCompleted).toBe(1);
  expect((await cluster.stats("prefill")).kvPullsServed).toBe(1);
  await expectNoPinnedBlocks(cluster);
});

it("abort in the skip case: decode is closed at once (no handoff to protect)", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(httpPairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const controller = new AbortController();
  const done = openai(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], n: 3, stream: true }, { signal: controller.signal }).catch((x: unknown) => x);
  await received("decode");
  controller.abort();
  await done;
  await eventually(async () => expect((await cluster!.stats("decode")).streamsCancelled).toBe(1), 2_000);
  expect((await cluster.stats("prefill")).generateRequests).toBe(0);
});

it("abort of a non-streamed request closes its leg too", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(httpPairConfig(cluster));
  const controller = new AbortController();
  const done = openai(gw).completions.create({ model: MODEL, prompt: PROMPT, n: 2, max_tokens: 4 }, { signal: controller.signal }).catch((x: unknown) => x);
  await received("decode");
  controller.abort();
  await done;
  await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(0), 2_000);
  await eventually(async () => expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled", streaming: false }]));
});
