// Client disconnects, the client's Abort RPC, and the Abort rules (ARCHITECTURE decision 5;
// pd-reference T19-T21): deferred decode abort only when decode holds a KV handoff, immediate
// otherwise, prefill aborted during its drain with decode never sent.
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { Code } from "@connectrpc/connect";
import { expectNoPinnedBlocks, generate, pairConfig, pairSpecs, type GenerateOutcome } from "../support/pd-fixtures.js";

const PROMPT = "a client that will go away";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForGenerate(engine: string) {
  await eventually(async () => {
    const s = await cluster!.stats(engine);
    if (s.generateRequests < 1) throw new Error(`${engine} has no Generate yet`);
  });
}

it("T19: disconnect before decode's first frame with a handoff -> Abort deferred until the frame (or the cap)", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 600 }));
  const controller = new AbortController();
  const done = generate(gw, { requestId: "t19", input: { case: "text", value: PROMPT }, stream: true }, { signal: controller.signal });
  await waitForGenerate("decode");
  controller.abort();
  await sleep(250);
  expect((await cluster.stats("decode")).abortsReceived).toBe(0); // still deferred
  await done;
  await gw.settle();
  const decode = await cluster.stats("decode");
  expect(decode.abortsReceived).toBe(1);
  expect(decode.abortedRequestIds).toEqual(["t19"]);
  expect((await cluster.stats("prefill")).abortsReceived).toBe(0); // prefill had completed
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("T19b: a deferred Abort goes out as soon as decode's first frame arrives", async () => {
  // A slow KV pull delays decode's first frame by ~300 ms; aborting mid-pull would leak.
  cluster = await startTestCluster({ engines: pairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 50, perBlockPullMs: 300, pullSetupMs: 0 } as never }) });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const controller = new AbortController();
  const done = generate(gw, { requestId: "t19b", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 50 }, stream: true }, { signal: controller.signal });
  await waitForGenerate("decode");
  controller.abort();
  await done;
  await gw.settle();
  const decode = await cluster.stats("decode");
  expect(decode.abortsReceived).toBe(1);
  expect(decode.abortsDuringPull).toBe(0);
  expect((await cluster.stats("prefill")).kvPullsServed).toBe(1);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("T20: disconnect in the skip case -> decode Abort at once", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const controller = new AbortController();
  const done = generate(gw, { requestId: "t20", input: { case: "text", value: PROMPT }, samplingParams: { n: 4 }, stream: true }, { signal: controller.signal });
  await waitForGenerate("decode");
  controller.abort();
  await done;
  await eventually(async () => expect((await cluster!.stats("decode")).abortedRequestIds).toEqual(["t20"]), 2_000);
  await gw.settle();
  expect((await cluster.stats("prefill")).generateRequests).toBe(0);
});

it("T21: disconnect during the prefill drain -> prefill Abort at once, decode never sent", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { hang: true });
  const gw = testGateway(pairConfig(cluster));
  const controller = new AbortController();
  const done = generate(gw, { requestId: "t21", input: { case: "text", value: PROMPT }, stream: true }, { signal: controller.signal });
  await waitForGenerate("prefill");
  controller.abort();
  await done;
  await gw.settle();
  expect((await cluster.stats("prefill")).abortedRequestIds).toEqual(["t21"]);
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  await expectNoPinnedBlocks(cluster);
  const [request] = gw.metrics.ofType("request");
  expect(request).toMatchObject({ status: 499, errorCode: "client_cancelled" });
});

it("disconnect mid-stream after decode's first frame -> immediate decode Abort, no pinned blocks", async () => {
  cluster = await startTestCluster({ engines: pairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 40, perBlockPullMs: 0.01 } }) });
  const gw = testGateway(pairConfig(cluster));
  const controller = new AbortController();
  const client = gw.engineClient();
  let frames = 0;
  try {
    for await (const _ of client.generate({ requestId: "mid", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 100, ignoreEos: true }, stream: true }, { headers: { "x-model": "m" }, signal: controller.signal })) {
      if (++frames === 2) controller.abort();
    }
  } catch {
    // cancelled by us
  }
  await gw.settle();
  await eventually(async () => expect((await cluster!.stats("decode")).abortedRequestIds).toEqual(["mid"]));
  expect((await cluster.stats("decode")).activeRequests).toBe(0);
  await expectNoPinnedBlocks(cluster);
});

// The client's Abort RPC (VllmEngine Abort on the gateway) goes through the same rule: the
// Generate client keeps reading its stream, which the engine ends (finish_reason "abort").

function finishReasons(out: GenerateOutcome): string[] {
  return [...out.completes.values()].map((c) => c.value.finishReason);
}

it("Abort RPC while decode pulls the handoff -> deferred until decode's first frame: the blocks are pulled, nothing stranded, no Abort to prefill", async () => {
  // A slow KV pull delays decode's first frame by ~300 ms; aborting mid-pull would leak.
  cluster = await startTestCluster({ engines: pairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 50, perBlockPullMs: 300, pullSetupMs: 0 } as never }) });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const done = generate(gw, { requestId: "ab-pull", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 50 }, stream: true });
  await waitForGenerate("decode");
  await gw.engineClient().abort({ requestIds: ["ab-pull"] }, { headers: { "x-model": "m" } });
  const out = await done;
  expect(out.error).toBeUndefined();
  expect(finishReasons(out)).toEqual(["abort"]);
  expect(out.tokens.get(0)?.length ?? 0).toBeLessThan(50);
  await gw.settle();
  const decode = await cluster.stats("decode");
  expect(decode.abortedRequestIds).toEqual(["ab-pull"]);
  expect(decode.abortsDuringPull).toBe(0);
  const prefill = await cluster.stats("prefill");
  expect(prefill.kvPullsServed).toBe(1);
  expect(prefill.abortsReceived).toBe(0); // its handoff was consumed, not abandoned
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("Abort RPC before decode's first frame with a handoff, decode stuck -> its Abort goes out at the cap", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 600 }));
  const done = generate(gw, { requestId: "ab-cap", input: { case: "text", value: PROMPT }, stream: true });
  await waitForGenerate("decode");
  await gw.engineClient().abort({ requestIds: ["ab-cap"] }, { headers: { "x-model": "m" } });
  await sleep(250);
  expect((await cluster.stats("decode")).abortsReceived).toBe(0); // still deferred
  const out = await done;
  expect(finishReasons(out)).toEqual(["abort"]);
  await gw.settle();
  expect((await cluster.stats("decode")).abortedRequestIds).toEqual(["ab-cap"]);
  expect((await cluster.stats("prefill")).abortsReceived).toBe(0);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("Abort RPC in the skip case (no handoff) -> decode Abort at once", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway(pairConfig(cluster, { deferredAbortMaxMs: 20_000 }));
  const done = generate(gw, { requestId: "ab-skip", input: { case: "text", value: PROMPT }, samplingParams: { n: 4 }, stream: true });
  await waitForGenerate("decode");
  const asked = Date.now();
  await gw.engineClient().abort({ requestIds: ["ab-skip"] }, { headers: { "x-model": "m" } });
  const out = await done;
  expect(Date.now() - asked).toBeLessThan(5_000); // not the 20 s cap
  expect(finishReasons(out)).toEqual(["abort", "abort", "abort", "abort"]);
  await gw.settle();
  expect((await cluster.stats("decode")).abortedRequestIds).toEqual(["ab-skip"]);
  expect((await cluster.stats("prefill")).generateRequests).toBe(0);
});

it("Abort RPC during the prefill drain -> prefill Abort at once, decode never sent, Generate ends CANCELED request_aborted", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { hang: true });
  const gw = testGateway(pairConfig(cluster));
  const done = generate(gw, { requestId: "ab-drain", input: { case: "text", value: PROMPT }, stream: true });
  await waitForGenerate("prefill");
  await gw.engineClient().abort({ requestIds: ["ab-drain"] }, { headers: { "x-model": "m" } });
  const out = await done;
  expect(out.error?.code).toBe(Code.Canceled);
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("request_aborted");
  await gw.settle();
  expect((await cluster.stats("prefill")).abortedRequestIds).toEqual(["ab-drain"]);
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  await expectNoPinnedBlocks(cluster);
  const [request] = gw.metrics.ofType("request");
  expect(request).toMatchObject({ status: 499, errorCode: "request_aborted" });
});
