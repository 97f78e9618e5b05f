// The disconnect window between prefill finishing and decode being dispatched, lease expiry
// before decode pulls, and load accounting returning to zero.
import { afterEach, expect, it } from "vitest";
import { runAttempt } from "../../src/pd/executor.js";
import type { VllmEngineClient } from "../../src/backends/vllm-engine.js";
import { EngineClients } from "../../src/backends/engine-clients.js";

const engines = new EngineClients();
import { vllmEngineTransport } from "../../src/backends/vllm-engine-transport.js";
import { EngineLoads } from "../../src/core/in-flight.js";
import { MemorySink } from "../../src/metrics/events.js";
import { create } from "@bufbuild/protobuf";
import { GenerateRequestSchema } from "../../src/gen/vllm_engine_pb.js";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { tokenize } from "../../sim/tokens.js";
import { testJob } from "../support/job.js";

const PROMPT = "the window between the legs";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

it("a disconnect right after prefill finished still dispatches decode with the handoff and aborts it, so no block stays pinned", async () => {
  cluster = await startTestCluster({ engines: pairSpecs({ leaseMs: 60_000 }) });
  const client = new AbortController();
  const real = engines.vllmEngine({ url: cluster.url("prefill"), transport: "connect" });
  // The prefill stream ends normally, and the client goes away at that very moment.
  const prefillClient = {
    ...real,
    generate: (req: Parameters<VllmEngineClient["generate"]>[0], opts?: Parameters<VllmEngineClient["generate"]>[1]) => ({
      async *[Symbol.asyncIterator]() {
        yield* real.generate(req, opts);
        client.abort();
      },
    }),
  } as unknown as VllmEngineClient;
  const pending: Promise<unknown>[] = [];
  const events = new MemorySink();
  const loads = new EngineLoads();
  const decodeClient = engines.vllmEngine({ url: cluster.url("decode"), transport: "connect" });
  const transport = vllmEngineTransport((e) => (e.name === "prefill" ? prefillClient : decodeClient));
  await expect(
    runAttempt(
      transport,
      testJob({ model: "m", surface: "engine", endpoint: "generate", payload: create(GenerateRequestSchema, { requestId: "window", input: { case: "text", value: PROMPT }, stream: true }) }),
      {
        prefill: { target: { name: "prefill", url: cluster.url("prefill"), transport: "connect" }, meta: { kvConnector: "NixlConnector", bootstrapHost: "127.0.0.1" } },
        decode: { target: { name: "decode", url: cluster.url("decode"), transport: "connect" }, meta: { bootstrapHost: "127.0.0.1" } },
        hasEncodeAssignments: false,
      },
      "window",
      {
        model: "m",
        clientSignal: client.signal,
        waitUntil: (p) => pending.push(p),
        loads,
        outcomes: { report: () => undefined },
        events,
        timeouts: { deferredAbortMaxMs: 2_000, prefillTimeoutMs: 10_000, firstFrameTimeoutMs: 10_000 },
        mintTransferId: () => "xfer-unused",
      },
    ),
  ).rejects.toMatchObject({ code: "client_cancelled" });
  await Promise.all(pending);
  // Decode was sent (with the handoff) and aborted; its engine either pulled the blocks or
  // rejected the transfer; either way the prefill engine holds nothing until the lease.
  // The Abort RPC is itself waitUntil work started by the deferred task: wait for it too.
  await eventually(async () => {
    const decode = await cluster!.stats("decode");
    expect(decode.generateRequests).toBe(1);
    expect(decode.abortedRequestIds).toEqual(["window"]);
  });
  await eventually(() => expectNoPinnedBlocks(cluster!));
  expect((await cluster.stats("prefill")).leasesExpired).toBe(0);
  expect(loads.total()).toBe(0);
});

it("a lease that expires before decode pulls: decode recomputes, the request still succeeds", async () => {
  cluster = await startTestCluster({
    engines: pairSpecs({ leaseMs: 30 }, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 0.5, perBlockPullMs: 0.01, pullSetupMs: 150 } }),
  });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "lease", input: { case: "text", value: PROMPT }, stream: true });
  expect(out.error).toBeUndefined();
  const [p, d] = [await cluster.stats("prefill"), await cluster.stats("decode")];
  expect(p.leasesExpired).toBe(1);
  expect(p.kvPullsRefused).toBe(1);
  expect(d.kvRecomputes).toBe(1);
  expect(d.promptTokensComputed).toBe(tokenize(PROMPT).length);
  await expectNoPinnedBlocks(cluster);
});

it("load accounting returns to zero after success, failure and cancellation", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway({ ...pairConfig(cluster), retry: { disabled: true } });
  await generate(gw, { requestId: "ok", input: { case: "text", value: PROMPT }, stream: true });
  await cluster.setFaults("decode", { failStart: { code: "unavailable" }, count: 1 });
  await generate(gw, { requestId: "fail", input: { case: "text", value: PROMPT } });
  await cluster.setFaults("decode", { hang: true });
  const controller = new AbortController();
  const cancelled = generate(gw, { requestId: "cancel", input: { case: "text", value: PROMPT }, samplingParams: { n: 2 } }, { signal: controller.signal });
  await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(1));
  controller.abort();
  await cancelled;
  await gw.settle();
  expect(gw.isolate.loads.total()).toBe(0);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});
