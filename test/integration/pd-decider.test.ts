// The PD decider (ARCHITECTURE decision 13): the prefill leg is skipped for a prompt below the
// model's threshold and while the prefill engine's queue is long (decode below its own), on
// both surfaces and every transport; it still runs whenever decode depends on it.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, generatesReceived, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { httpPairConfig, httpPairSpecs, openaiReceived } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const THRESHOLD = 64;
const ids = (n: number) => Array.from({ length: n }, (_, i) => 100 + i);
const withPd = <T extends { models: Record<string, object> }>(config: T, pd: Record<string, unknown>): T => ({
  ...config,
  models: { [MODEL]: { ...config.models[MODEL], pd } },
});

describe.each(["connect", "grpc-web"] as const)("VllmEngine surface over %s: short_prompt", (transport) => {
  it("a prompt below the threshold skips the leg; one at the threshold runs it", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(withPd(pairConfig(cluster, { transport }), { decode_only_max_prompt_tokens: THRESHOLD }));
    const short = await generate(gw, { requestId: "short", input: { case: "tokenized", value: { originalText: "", inputIds: ids(THRESHOLD - 1) } }, samplingParams: { maxTokens: 3 } });
    expect(short.error).toBeUndefined();
    expect(short.header.get("x-pd-prefill")).toBe("skipped; reason=short_prompt");
    expect((await cluster.stats("prefill")).generateRequests).toBe(0);
    const [decodeReq] = await generatesReceived(cluster, "decode");
    expect(decodeReq!.kv_transfer_params_json).toBeUndefined();
    const at = await generate(gw, { requestId: "at", input: { case: "tokenized", value: { originalText: "", inputIds: ids(THRESHOLD) } }, samplingParams: { maxTokens: 3 } });
    expect(at.header.get("x-pd-prefill")).toBe("ran");
    expect((await cluster.stats("prefill")).generateRequests).toBe(1);
    await gw.settle();
    const decisions = gw.metrics.ofType("pd_decision");
    expect(decisions.map((d) => [d.prefill, d.skipReason ?? ""])).toEqual([["skipped", "short_prompt"], ["ran", ""]]);
    expect(decisions[0]!.prefillMs).toBeUndefined();
    expect(decisions[0]!.kvTransferMs).toBeUndefined();
    // A skipped leg costs nothing: no outcome, no load, no breaker entry for the prefill engine.
    expect(gw.metrics.ofType("engine_outcome").filter((e) => e.leg === "prefill")).toHaveLength(1);
  });
});

describe("guards win over a short prompt", () => {
  it("Mooncake: decode is pointed at prefill's bootstrap address, so the leg runs", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ kvConnector: "MooncakeConnector" }, { kvConnector: "MooncakeConnector" }) });
    const gw = testGateway(withPd(pairConfig(cluster), { decode_only_max_prompt_tokens: THRESHOLD }));
    const out = await generate(gw, { requestId: "moon", input: { case: "tokenized", value: { originalText: "", inputIds: ids(8) } }, samplingParams: { maxTokens: 3 } });
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    expect((await cluster.stats("prefill")).generateRequests).toBe(1);
  });

  it("multimodal: pixels ride the prefill leg, so it runs", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(withPd(pairConfig(cluster), { decode_only_max_prompt_tokens: THRESHOLD }));
    const pixels = { pixelValues: { shape: [1, 3], dtype: "float32", payload: { case: "inline" as const, value: new Uint8Array([1, 2, 3]) } }, mmHashes: ["h1"] };
    const out = await generate(gw, { requestId: "mm", input: { case: "tokenized", value: { originalText: "", inputIds: ids(8) } }, samplingParams: { maxTokens: 3 }, mmInputs: pixels });
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    expect((await cluster.stats("prefill")).generateRequests).toBe(1);
  });
});

describe("OpenAI surface over HTTP engines", () => {
  const chat = (content: string) =>
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content }], max_tokens: 3 }),
    });

  it("short_prompt by the estimated length (UTF-8 bytes / 4)", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(withPd(httpPairConfig(cluster), { decode_only_max_prompt_tokens: THRESHOLD }));
    const short = await gw.fetch(chat("hi there"));
    expect(short.headers.get("x-pd-prefill")).toBe("skipped; reason=short_prompt");
    await short.text();
    const long = await gw.fetch(chat("x".repeat(4 * THRESHOLD)));
    expect(long.headers.get("x-pd-prefill")).toBe("ran");
    await long.text();
    expect((await openaiReceived(cluster, "prefill")).length).toBe(1);
    const decodeBodies = (await openaiReceived(cluster, "decode")).map((r) => r.body as Record<string, unknown>);
    expect(decodeBodies[0]!.kv_transfer_params).toBeUndefined();
    expect(decodeBodies[1]!.kv_transfer_params).toBeDefined();
  });

  it("prefill_busy: skipped while vllm:num_requests_waiting is at the limit and decode is below its own", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const base = httpPairConfig(cluster);
    const gw = testGateway({ ...withPd(base, { prefill_queue_limit: 2, decode_queue_limit: 2 }), loads: { ttl_ms: 100 } });
    // Two requests stuck in the prefill engine's waiting queue, sent to it directly.
    const stuck = new AbortController();
    const hang = () =>
      fetch(`${cluster!.url("prefill")}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-sim-fault": JSON.stringify({ hang: true }) },
        body: JSON.stringify({ model: MODEL, prompt: "waiting", max_tokens: 1 }),
        signal: stuck.signal,
      }).catch(() => undefined);
    const held = [hang(), hang()];
    try {
      await eventually(async () => expect((await cluster!.stats("prefill")).activeRequests).toBe(2));
      // The first request starts the background poll; once a reading is in, prefill is skipped.
      await eventually(async () => {
        const res = await gw.fetch(chat("the prefill pool is busy"));
        await res.text();
        await gw.settle();
        expect(res.headers.get("x-pd-prefill")).toBe("skipped; reason=prefill_busy");
      });
      // Decode at its own limit too: prefill runs again (decode computing the prompt would not help).
      const heldDecode = [0, 1].map(() =>
        fetch(`${cluster!.url("decode")}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-sim-fault": JSON.stringify({ hang: true }) },
          body: JSON.stringify({ model: MODEL, prompt: "waiting", max_tokens: 1 }),
          signal: stuck.signal,
        }).catch(() => undefined),
      );
      held.push(...heldDecode);
      await eventually(async () => {
        const res = await gw.fetch(chat("both pools busy"));
        await res.text();
        await gw.settle();
        expect(res.headers.get("x-pd-prefill")).toBe("ran");
      });
    } finally {
      stuck.abort();
      await Promise.all(held);
    }
  });
});
