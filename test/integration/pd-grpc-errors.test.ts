// Engine failures on either leg map to stable codes and statuses (pd-reference T15-T18).
import { Code } from "@connectrpc/connect";
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

const PROMPT = "an engine is about to fail";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

it("T15: prefill fails to start (UNAVAILABLE) -> 503 prefill_worker_failed_to_start, decode never called", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { failStart: { code: "unavailable", message: "x" } });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "t15", input: { case: "text", value: PROMPT } });
  expect(out.error?.code).toBe(Code.Unavailable);
  expect(out.error?.rawMessage).toBe("Prefill worker failed to start: x (prefill engine 'prefill')");
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_worker_failed_to_start");
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  await gw.settle();
  // 503 is retryable: the default budget is 5 attempts, all on the only prefill engine.
  expect((await cluster.stats("prefill")).generateRequests).toBe(5);
  expect(gw.metrics.ofType("engine_outcome")).toEqual(Array(5).fill({ type: "engine_outcome", model: "m", engine: "prefill", leg: "prefill", status: 503 }));
  expect(gw.metrics.ofType("pd_decision")).toHaveLength(0);
  expect(gw.metrics.ofType("request")).toMatchObject([{ status: 503, errorCode: "prefill_worker_failed_to_start" }]);
});

it("T16: prefill stream errors after its first frame (INTERNAL) -> 500 prefill_stream_error", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { failAfterFrames: { frames: 1, code: "internal", message: "boom" } });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "t16", input: { case: "text", value: PROMPT } });
  expect(out.error?.code).toBe(Code.Internal);
  expect(out.error?.rawMessage).toBe("Prefill stream error: boom (prefill engine 'prefill')");
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_stream_error");
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual(Array(5).fill(["prefill", 500]));
});

it("T17: decode fails to start (INVALID_ARGUMENT) -> 400 decode_worker_failed_to_start; prefill's blocks are released", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { failStart: { code: "invalid_argument", message: "bad" } });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "t17", input: { case: "text", value: PROMPT } });
  expect(out.error?.code).toBe(Code.InvalidArgument);
  expect(out.error?.rawMessage).toBe("Decode worker failed to start: bad (decode engine 'decode')");
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_worker_failed_to_start");
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 200], ["decode", 400]]);
  expect(gw.metrics.ofType("pd_decision")).toHaveLength(0);
  expect((await cluster.stats("decode")).generateRequests).toBe(1); // 400 is not retried
  // The decode engine rejected the transfer, so the prefill engine freed its blocks early.
  await eventually(() => expectNoPinnedBlocks(cluster!));
  expect((await cluster.stats("prefill")).leasesExpired).toBe(0);
});

it("T18: skipped prefill + decode UNAVAILABLE -> 503 decode_worker_failed_to_start, prefill untouched", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { failStart: { code: "unavailable", message: "down" } });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "t18", input: { case: "text", value: PROMPT }, samplingParams: { n: 4 } });
  expect(out.error?.code).toBe(Code.Unavailable);
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_worker_failed_to_start");
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual(Array(5).fill(["decode", 503]));
  expect((await cluster.stats("prefill")).generateRequests).toBe(0);
});

it("decode failing mid-stream reaches the client as the engine's error after the frames it sent", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "mid" } });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "mid", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 8 }, stream: true });
  expect(out.frames.length).toBeGreaterThan(0);
  expect(out.error?.code).toBe(Code.Internal);
  await gw.settle();
  expect((await cluster.stats("decode")).abortsReceived).toBe(0);
});

it("client mistakes get InvalidArgument naming the field", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const noInput = await generate(gw, { requestId: "x" });
  expect(noInput.error?.code).toBe(Code.InvalidArgument);
  expect(noInput.error?.rawMessage).toMatch(/^input:/);
  const tooMany = await generate(gw, { requestId: "x", input: { case: "text", value: "a" }, samplingParams: { n: 1000 } });
  expect(tooMany.error?.rawMessage).toMatch(/^sampling_params\.n:/);
  for (const name of ["constructor", "__proto__", "toString"]) {
    const proto = await generate(gw, { requestId: "x", input: { case: "text", value: "a" } }, { headers: { "x-model": name } });
    expect(proto.error?.code).toBe(Code.NotFound);
  }
  const unknownModel = await generate(gw, { requestId: "x", input: { case: "text", value: "a" } }, { headers: { "x-model": "nope" } });
  expect(unknownModel.error?.code).toBe(Code.NotFound);
  expect(unknownModel.error?.metadata.get("x-gateway-error-code")).toBe("model_not_found");
  expect((await cluster.stats("prefill")).generateRequests + (await cluster.stats("decode")).generateRequests).toBe(0);
});

it("client-supplied KV params are dropped before any engine sees them", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  await generate(gw, { requestId: "kv", input: { case: "text", value: PROMPT }, samplingParams: { n: 2 }, kvTransferParamsJson: '{"do_remote_prefill":true,"remote_host":"10.9.9.9"}', kvTransferParams: { remoteHost: "10.9.9.9", remotePort: 1 } });
  const stats = await cluster.stats("decode");
  const body = stats.recent.find((r) => r.method === "Generate")!.body as Record<string, unknown>;
  expect(body.kv_transfer_params_json).toBeUndefined();
  expect(body.kv_transfer_params).toBeUndefined();
});

it("a hanging prefill times out: 504 prefill_timeout, prefill aborted, decode never sent", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { hang: true });
  const gw = testGateway({ ...pairConfig(cluster), pd: { prefill_timeout_ms: 200, engine_info_ttl_ms: 0 }, retry: { disabled: true } });
  const out = await generate(gw, { requestId: "hang-p", input: { case: "text", value: PROMPT } });
  expect(out.error?.code).toBe(Code.DeadlineExceeded);
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_timeout");
  await gw.settle();
  expect((await cluster.stats("prefill")).abortedRequestIds).toEqual(["hang-p"]);
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
  expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "prefill", status: 504 }]);
});

it("a decode that never sends a frame times out: 504 decode_timeout, decode aborted, no pinned blocks", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway({ ...pairConfig(cluster), pd: { first_frame_timeout_ms: 200, engine_info_ttl_ms: 0 }, retry: { disabled: true } });
  const out = await generate(gw, { requestId: "hang-d", input: { case: "text", value: PROMPT } });
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_timeout");
  await gw.settle();
  expect((await cluster.stats("decode")).abortedRequestIds).toEqual(["hang-d"]);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});

it("an unreachable prefill engine: 503 prefill_worker_failed_to_start", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway({ ...pairConfig(cluster, { prefill: { url: "http://127.0.0.1:9", kv_connector: "NixlConnector" } }), retry: { disabled: true } });
  const out = await generate(gw, { requestId: "down", input: { case: "text", value: PROMPT } });
  expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_worker_failed_to_start");
  expect((await cluster.stats("decode")).generateRequests).toBe(0);
});

it.each([["connect"], ["grpc-web"]] as const)("a prefill Generate (%s) whose connection closes before any answer is retried on another connection", async (transport) => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("prefill", { dropConnection: true, count: 2 });
  const gw = testGateway({ ...pairConfig(cluster, { transport }), retry: { disabled: true } });
  const out = await generate(gw, { requestId: `drop-${transport}`, input: { case: "text", value: PROMPT } });
  expect(out.error).toBeUndefined();
  expect((await cluster.stats("prefill")).connectionsDropped).toBe(2);
  expect((await cluster.stats("prefill")).generateRequests).toBe(1);
  await gw.settle();
  expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 200], ["decode", 200]]);
  await eventually(() => expectNoPinnedBlocks(cluster!));
});
