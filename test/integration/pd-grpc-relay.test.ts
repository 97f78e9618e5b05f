// Sequential PD over Connect, n <= 1: the prefill leg runs and its KV handoff reaches decode
// (pd-reference T1-T7, T14, T22, T23).
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, eventually, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, generate, generatesReceived, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { outputTokenIds, tokenize } from "../../sim/tokens.js";

const PROMPT = "the quick brown fox jumps over the lazy dog again and again";
const NIXL_TAG = '{"do_remote_decode":true,"do_remote_prefill":false}';
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe("n=1 over NIXL (T1, T22)", () => {
  it.each(["connect", "grpc-web"] as const)("relays the handoff over %s and streams decode's output", async (transport) => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { transport }));
    const out = await generate(gw, { requestId: "t1", input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 6, seed: 7, temperature: 0.5 }, stream: true }, { protocol: transport });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    expect(out.tokens.get(0)).toEqual(outputTokenIds(tokenize(PROMPT), 7, 0, out.tokens.get(0)!.length));
    expect(out.tokens.get(0)!.length).toBeGreaterThan(0);

    const [prefillReq] = await generatesReceived(cluster, "prefill");
    expect(prefillReq).toMatchObject({
      request_id: "t1",
      sampling_params: { max_tokens: 1, n: 1, ignore_eos: true, seed: 7, temperature: 0.5 },
      kv_transfer_params_json: NIXL_TAG,
    });
    const sp = prefillReq!.sampling_params as Record<string, unknown>;
    expect(sp.min_tokens ?? 0).toBe(0);
    expect(sp.stop ?? []).toEqual([]);
    expect(prefillReq!.stream ?? false).toBe(false);

    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(decodeReq).toMatchObject({ request_id: "t1", sampling_params: { max_tokens: 6, seed: 7 }, stream: true });
    const handoff = JSON.parse(decodeReq!.kv_transfer_params_json as string);
    expect(handoff).toMatchObject({ do_remote_prefill: true, remote_request_id: "t1", remote_port: Number(new URL(cluster.url("prefill")).port) });

    const [p, d] = [await cluster.stats("prefill"), await cluster.stats("decode")];
    expect(p.promptTokensComputed).toBe(tokenize(PROMPT).length);
    expect(p.kvPullsServed).toBe(1);
    expect(d.promptTokensComputed).toBe(0); // decode pulled, did not recompute
    expect(d.kvRecomputes).toBe(0);

    await gw.settle();
    const decision = gw.metrics.ofType("pd_decision");
    expect(decision).toHaveLength(1);
    expect(decision[0]).toMatchObject({ connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "prefill", decodeEngine: "decode" });
    expect(decision[0]!.prefillMs).toBeGreaterThanOrEqual(0);
    expect(decision[0]!.kvTransferMs).toBeGreaterThanOrEqual(0);
    expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
    expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 200], ["decode", 200]]);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 200, backend: "pd", endpoint: "generate" }]);
    const [timing] = gw.metrics.ofType("stream_complete");
    expect(timing).toMatchObject({ surface: "engine", endpoint: "generate", outputTokens: out.tokens.get(0)!.length, inputTokens: tokenize(PROMPT).length });
    expect(timing!.ttftMs).toBeGreaterThanOrEqual(0);
    expect(timing!.generationMs).toBeGreaterThanOrEqual(timing!.ttftMs!);
    // T22: normal completion sends no Abort to either leg.
    expect((await cluster.stats("prefill")).abortsReceived + (await cluster.stats("decode")).abortsReceived).toBe(0);
    await expectNoPinnedBlocks(cluster);
  });

  it("non-streamed request (T22): one complete, no Abort", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    const out = await generate(gw, { requestId: "t22", input: { case: "tokenized", value: { inputIds: [5, 6, 7, 8] } }, samplingParams: { maxTokens: 4 } });
    expect(out.error).toBeUndefined();
    expect(out.frames.every((f) => f.response.case === "complete")).toBe(true);
    expect(out.tokens.get(0)).toEqual(outputTokenIds([5, 6, 7, 8], undefined, 0, out.tokens.get(0)!.length));
    await gw.settle();
    expect((await cluster.stats("decode")).abortsReceived).toBe(0);
    expect((await cluster.stats("prefill")).abortsReceived).toBe(0);
  });
});

describe("handoff edge cases", () => {
  it("T2: NIXL configured, prefill returns no handoff -> failure counted, decode recomputes, no KV-transfer sample", async () => {
    // The engine runs no connector, so it never returns params; the config says NIXL.
    cluster = await startTestCluster({ engines: pairSpecs({ kvConnector: "none" }) });
    const gw = testGateway(pairConfig(cluster, { prefill: { kv_connector: "NixlConnector" } }));
    const out = await generate(gw, { requestId: "t2", input: { case: "text", value: PROMPT }, stream: true });
    expect(out.error).toBeUndefined();
    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(decodeReq!.kv_transfer_params_json).toBeUndefined();
    expect((await cluster.stats("decode")).promptTokensComputed).toBe(tokenize(PROMPT).length);
    await gw.settle();
    expect(gw.metrics.ofType("kv_transfer_failure")).toEqual([{ type: "kv_transfer_failure", model: "m", prefillEngine: "prefill" }]);
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision).toMatchObject({ prefill: "ran", kvInjection: "none" });
    expect(decision!.prefillMs).toBeDefined();
    expect(decision!.kvTransferMs).toBeUndefined();
  });

  it("T3: passthrough engine that returns a handoff unprompted -> untagged prefill, relayed", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ kvHandoffByDefault: true }) });
    const gw = testGateway(pairConfig(cluster, { prefill: { kv_connector: "LMCacheConnectorV1" } }));
    const out = await generate(gw, { requestId: "t3", input: { case: "text", value: PROMPT } });
    expect(out.error).toBeUndefined();
    const [prefillReq] = await generatesReceived(cluster, "prefill");
    expect(prefillReq!.kv_transfer_params_json).toBeUndefined();
    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(JSON.parse(decodeReq!.kv_transfer_params_json as string)).toMatchObject({ do_remote_prefill: true });
    await gw.settle();
    expect(gw.metrics.ofType("pd_decision")[0]).toMatchObject({ connectorMode: "passthrough", kvInjection: "relayed" });
    expect(gw.metrics.ofType("pd_decision")[0]!.kvTransferMs).toBeDefined();
    await eventually(() => expectNoPinnedBlocks(cluster!));
  });

  it("T4: passthrough, nothing returned -> nothing injected, no failure, no KV-transfer sample", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { prefill: { kv_connector: "" } }));
    const out = await generate(gw, { requestId: "t4", input: { case: "text", value: PROMPT } });
    expect(out.error).toBeUndefined();
    const [prefillReq] = await generatesReceived(cluster, "prefill");
    expect(prefillReq!.kv_transfer_params_json).toBeUndefined();
    await gw.settle();
    expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision).toMatchObject({ connectorMode: "passthrough", kvInjection: "none" });
    expect(decision!.prefillMs).toBeDefined();
    expect(decision!.kvTransferMs).toBeUndefined();
  });

  it("T14: n unset or 0 is n=1 (relay on, no skip)", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster));
    for (const samplingParams of [undefined, { n: 0, maxTokens: 3 }]) {
      const out = await generate(gw, { requestId: `t14-${samplingParams ? "0" : "unset"}`, input: { case: "text", value: PROMPT }, samplingParams });
      expect(out.header.get("x-pd-prefill")).toBe("ran");
    }
    expect((await cluster.stats("prefill")).kvPullsServed).toBe(2);
  });
});

describe("Mooncake (T5-T7)", () => {
  async function mooncake(kvEngineId: string, extra: Record<string, unknown> = {}, dataParallelSize?: number) {
    cluster = await startTestCluster({ engines: pairSpecs({ kvConnector: "MooncakeConnector", kvEngineId, bootstrapPort: 0, ...(dataParallelSize ? { dataParallelSize } : {}) }, { kvConnector: "MooncakeConnector" }) });
    return testGateway(pairConfig(cluster, { prefill: { bootstrap_port: cluster.engine("prefill").bootstrapPort, ...extra } }));
  }

  it("T5: engine id -> minted transfer id, 3-key prefill and 5-key decode params", async () => {
    const gw = await mooncake("eng");
    const out = await generate(gw, { requestId: "t5", input: { case: "text", value: PROMPT }, stream: true });
    expect(out.error).toBeUndefined();
    const [prefillReq] = await generatesReceived(cluster!, "prefill");
    const tag = JSON.parse(prefillReq!.kv_transfer_params_json as string);
    expect(Object.keys(tag)).toEqual(["do_remote_decode", "do_remote_prefill", "transfer_id"]);
    expect(tag.transfer_id).toMatch(/^xfer-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const [decodeReq] = await generatesReceived(cluster!, "decode");
    expect(JSON.parse(decodeReq!.kv_transfer_params_json as string)).toEqual({
      do_remote_decode: false,
      do_remote_prefill: true,
      transfer_id: tag.transfer_id,
      remote_engine_id: "eng",
      remote_bootstrap_addr: `http://127.0.0.1:${cluster!.engine("prefill").bootstrapPort}`,
    });
    expect(decodeReq!.kv_transfer_params).toBeUndefined();
    expect((await cluster!.stats("prefill")).kvPullsServed).toBe(1);
    expect((await cluster!.stats("decode")).promptTokensComputed).toBe(0);
    await gw.settle();
    expect(gw.metrics.ofType("pd_decision")[0]).toMatchObject({ connectorMode: "mooncake", kvInjection: "minted" });
    expect(gw.metrics.ofType("pd_decision")[0]!.kvTransferMs).toBeDefined();
  });

  it("T6: DP size 2 pinned to rank 1 -> engine id eng_dp1", async () => {
    const gw = await mooncake("eng", { dp_rank: 1 }, 2);
    await generate(gw, { requestId: "t6", input: { case: "text", value: PROMPT } });
    const [prefillReq] = await generatesReceived(cluster!, "prefill");
    expect(prefillReq!.data_parallel_rank).toBe(1);
    const [decodeReq] = await generatesReceived(cluster!, "decode");
    expect(JSON.parse(decodeReq!.kv_transfer_params_json as string).remote_engine_id).toBe("eng_dp1");
  });

  it("T7: no engine id (legacy) -> untagged prefill, typed host/port on decode", async () => {
    const gw = await mooncake("");
    const out = await generate(gw, { requestId: "t7", input: { case: "text", value: PROMPT } });
    expect(out.error).toBeUndefined();
    const [prefillReq] = await generatesReceived(cluster!, "prefill");
    expect(prefillReq!.kv_transfer_params_json).toBeUndefined();
    const [decodeReq] = await generatesReceived(cluster!, "decode");
    expect(decodeReq!.kv_transfer_params_json).toBeUndefined();
    expect(decodeReq!.kv_transfer_params).toEqual({ remote_host: "127.0.0.1", remote_port: cluster!.engine("prefill").bootstrapPort });
    expect((await cluster!.stats("prefill")).kvPullsServed).toBe(1);
    await gw.settle();
    expect(gw.metrics.ofType("pd_decision")[0]).toMatchObject({ connectorMode: "mooncake", kvInjection: "legacy" });
    expect(gw.metrics.ofType("pd_decision")[0]!.kvTransferMs).toBeDefined();
    await expectNoPinnedBlocks(cluster!);
  });
});

it("T23: DP-aware pair pins each leg's rank; non-DP engines leave it unset", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const dp = testGateway(pairConfig(cluster, { prefill: { dp_rank: 0, dp_size: 2 }, decode: { dp_rank: 3, dp_size: 4 } }));
  await generate(dp, { requestId: "t23", input: { case: "text", value: PROMPT } });
  const plain = testGateway(pairConfig(cluster));
  await generate(plain, { requestId: "t23b", input: { case: "text", value: PROMPT } });
  const [p1, p2] = await generatesReceived(cluster, "prefill");
  const [d1, d2] = await generatesReceived(cluster, "decode");
  expect([p1!.data_parallel_rank, d1!.data_parallel_rank]).toEqual([0, 3]);
  expect([p2!.data_parallel_rank, d2!.data_parallel_rank]).toEqual([undefined, undefined]);
});
