// Fan-out (n > 1) over Connect: the shared predicate skips the prefill leg unless something
// still depends on it (pd-reference T8-T13), and the single-consumer hazard it avoids.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, generate, generatesReceived, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { outputTokenIds, tokenize } from "../../sim/tokens.js";

const PROMPT = "fan out this prompt to several samples please";
const pixels = { pixelValues: { shape: [1, 4], dtype: "float32", payload: { case: "inline" as const, value: new Uint8Array(16) } }, mmHashes: ["img-1"] };
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe.each([
  ["T8", "NixlConnector", "nixl"],
  ["T9", "", "passthrough"],
] as const)("%s: n=4 text, no EPD", (_t, kvConnector, mode) => {
  it("sends no prefill RPC, hands decode the original request, returns n choices", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { prefill: { kv_connector: kvConnector }, decode: { dp_rank: 2, dp_size: 4 } }));
    const out = await generate(gw, { requestId: "fan", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 5, seed: 3 }, stream: true });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    expect([...out.completes.keys()].sort()).toEqual([0, 1, 2, 3]);
    for (let i = 0; i < 4; i++) {
      expect(out.tokens.get(i)).toEqual(outputTokenIds(tokenize(PROMPT), 3, i, out.tokens.get(i)!.length));
    }
    const prefill = await cluster.stats("prefill");
    expect([prefill.generateRequests, prefill.promptTokensComputed, prefill.prefillComputations]).toEqual([0, 0, 0]);
    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(decodeReq).toEqual({
      request_id: "fan",
      text: PROMPT,
      sampling_params: { n: 4, max_tokens: 5, seed: 3 },
      stream: true,
      data_parallel_rank: 2,
    });
    await gw.settle();
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision).toMatchObject({ connectorMode: mode, prefill: "skipped", skipReason: "fanout", kvInjection: "none", n: 4 });
    expect(decision!.prefillMs).toBeUndefined();
    expect(decision!.kvTransferMs).toBeUndefined();
    expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
    expect(gw.metrics.ofType("engine_outcome").map((e) => e.leg)).toEqual(["decode"]);
    expect((await cluster.stats("decode")).kvSiblingHazards).toBe(0);
  });
});

it("T10: n=4 multimodal -> prefill runs untagged with pixels, decode gets the full payload", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "t10", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 }, mmInputs: pixels });
  expect(out.error).toBeUndefined();
  expect(out.header.get("x-pd-prefill")).toBe("ran");
  const [prefillReq] = await generatesReceived(cluster, "prefill");
  expect(prefillReq!.kv_transfer_params_json).toBeUndefined();
  expect((prefillReq!.mm_inputs as Record<string, unknown>).pixel_values).toBeDefined();
  const [decodeReq] = await generatesReceived(cluster, "decode");
  expect(decodeReq!.kv_transfer_params_json).toBeUndefined();
  expect((decodeReq!.mm_inputs as Record<string, unknown>).pixel_values).toBeDefined();
  await gw.settle();
  const [decision] = gw.metrics.ofType("pd_decision");
  expect(decision).toMatchObject({ prefill: "ran", kvInjection: "none" });
  expect(decision!.prefillMs).toBeDefined();
  expect(decision!.kvTransferMs).toBeUndefined();
  expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
});

it("n=1 multimodal -> decode gets the handoff and no pixels (decision 6)", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const out = await generate(gw, { requestId: "mm1", input: { case: "text", value: PROMPT }, mmInputs: pixels });
  expect(out.error).toBeUndefined();
  const [decodeReq] = await generatesReceived(cluster, "decode");
  expect(decodeReq!.kv_transfer_params_json).toBeDefined();
  expect(decodeReq!.mm_inputs).toEqual({ mm_hashes: ["img-1"] });
});

it("T11: n=4 text with encode engines in the pool -> prefill dispatched", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster, { encode: true }));
  const out = await generate(gw, { requestId: "t11", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 } });
  expect(out.header.get("x-pd-prefill")).toBe("ran");
  expect((await cluster.stats("prefill")).generateRequests).toBe(1);
});

describe.each([
  ["T12", "eng"],
  ["T13", ""],
])("%s: n=4 Mooncake (engine id %j)", (_t, kvEngineId) => {
  it("keeps the prefill leg, mints no transfer id, gives decode typed host/port", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ kvConnector: "MooncakeConnector", kvEngineId, bootstrapPort: 0 }, { kvConnector: "MooncakeConnector" }) });
    const port = cluster.engine("prefill").bootstrapPort;
    const gw = testGateway(pairConfig(cluster, { prefill: { bootstrap_port: port } }));
    const out = await generate(gw, { requestId: "moon4", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 } });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    const [prefillReq] = await generatesReceived(cluster, "prefill");
    expect(prefillReq!.kv_transfer_params_json).toBeUndefined();
    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(decodeReq!.kv_transfer_params_json).toBeUndefined();
    expect(decodeReq!.kv_transfer_params).toEqual({ remote_host: "127.0.0.1", remote_port: port });
    await gw.settle();
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision).toMatchObject({ connectorMode: "mooncake", prefill: "ran", kvInjection: "legacy" });
    expect(decision!.kvTransferMs).toBeDefined();
  });
});

describe("the single-consumer hazard", () => {
  it("relay forced on for n=4 makes decode children fight over one handoff; the predicate avoids it", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { allowOverrides: true }));
    const forced = await generate(gw, { requestId: "forced", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 } }, { headers: { "x-pd-override": "force-relay" } });
    expect(forced.error).toBeUndefined();
    const afterForced = await cluster.stats("decode");
    expect(afterForced.kvSiblingHazards).toBe(3);
    expect(afterForced.kvRecomputes).toBe(3);

    await cluster.reset();
    const real = await generate(gw, { requestId: "real", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 3 } });
    expect(real.header.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    const d = await cluster.stats("decode");
    expect([d.kvSiblingHazards, d.kvRecomputes]).toEqual([0, 0]);
    expect((await cluster.stats("prefill")).promptTokensComputed).toBe(0);
    await expectNoPinnedBlocks(cluster);
  });

  it("overrides are ignored unless the config allows them", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "o", input: { case: "text", value: PROMPT }, samplingParams: { n: 4, maxTokens: 2 } }, { headers: { "x-pd-override": "force-prefill" } });
    expect(out.header.get("x-pd-prefill")).toBe("skipped; reason=fanout");
  });
});
