// The prefill cap on every transport (docs/pd.md "The prefill cap"): a NIXL prefill engine
// hands its KV over only for a request that finished length-capped (vLLM nixl_connector.py
// request_finished; the sim models it), so a prefill leg whose one token would be EOS, a stop
// token id or complete a stop string must still end length-capped. The gateway sends it one
// token with EOS ignored and no stops; the client's stop settings reach decode only.
import { afterEach, describe, expect, it } from "vitest";
import { detokenize, outputTokenIds, tokenize } from "../../sim/tokens.js";
import type { SimFault } from "../../sim/types.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, generatesReceived, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, post, openaiReceived } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const PROMPT = "hand the cache over whatever the first token is";
const FIRST = outputTokenIds(tokenize(PROMPT), undefined, 0, 1)[0]!;
const FIRST_WORD = detokenize([FIRST]).trim();

/** [what the one token would do, the client's fields (OpenAI), an engine fault] */
const CASES: [string, Record<string, unknown>, SimFault | undefined][] = [
  ["be EOS", {}, { eosAfter: 1, leg: "prefill" }],
  ["complete a stop string", { stop: [FIRST_WORD] }, undefined],
  ["be a stop token id", { stop_token_ids: [FIRST] }, undefined],
];

/** The prefill engine's handoff was pulled by decode; nothing recomputed, no failure counted. */
async function expectHandedOff(c: TestCluster, gw: TestGateway) {
  const [p, d] = [await c.stats("prefill"), await c.stats("decode")];
  expect(p.prefillComputations).toBe(1);
  expect(p.kvPullsServed).toBe(1);
  expect(d.kvPullsCompleted).toBe(1);
  expect(d.kvRecomputes).toBe(0);
  expect(d.promptTokensComputed).toBe(0);
  await gw.settle();
  expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
  expect(gw.metrics.ofType("pd_decision")).toMatchObject([{ prefill: "ran", kvInjection: "relayed" }]);
  await expectNoPinnedBlocks(c);
}

describe("an HTTP prefill whose sampled token would be EOS or complete a stop string still hands off", () => {
  it.each(CASES)("its one token would %s", async (_name, fields, fault) => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    if (fault) await cluster.setFaults("prefill", fault);
    const gw = testGateway(httpPairConfig(cluster));
    const res = await post(gw, "/v1/completions", { model: "m", prompt: PROMPT, max_tokens: 8, ...fields });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-pd-prefill")).toBe("ran");
    const body = (await res.json()) as { choices: { finish_reason: string }[] };
    const [pr] = await openaiReceived(cluster, "prefill");
    const [dr] = await openaiReceived(cluster, "decode");
    // The cap on the prefill leg; the client's stops on decode, which honours them.
    expect(pr!.body).toMatchObject({ max_tokens: 1, ignore_eos: true, stream: false });
    expect(pr!.body).not.toHaveProperty("stop");
    expect(pr!.body).not.toHaveProperty("stop_token_ids");
    expect(dr!.body).toMatchObject({ max_tokens: 8, ...fields });
    if (!fault) expect(body.choices[0]!.finish_reason).toBe("stop");
    await expectHandedOff(cluster, gw);
  });

  it("without the cap the sim engine keeps no handoff for it (what the gateway used to send)", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const res = await fetch(`${cluster.url("prefill")}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", prompt: PROMPT, max_tokens: 1, stream: false, stop: [FIRST_WORD], kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } }),
    });
    const body = (await res.json()) as { choices: { finish_reason: string }[]; kv_transfer_params: unknown };
    expect(body.choices[0]!.finish_reason).toBe("stop");
    expect(body.kv_transfer_params).toBeNull();
    expect((await cluster.stats("prefill")).handoffsPinned).toBe(0);
  });
});

describe("the same over VllmEngine Generate", () => {
  it.each(CASES)("its one token would %s", async (_name, fields, fault) => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    if (fault) await cluster.setFaults("prefill", fault);
    const gw = testGateway(pairConfig(cluster));
    const samplingParams = { maxTokens: 8, stop: (fields.stop as string[] | undefined) ?? [], stopTokenIds: (fields.stop_token_ids as number[] | undefined) ?? [] };
    const out = await generate(gw, { requestId: "cap", input: { case: "text", value: PROMPT }, samplingParams, stream: true });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    const [pr] = await generatesReceived(cluster, "prefill");
    const sp = pr!.sampling_params as Record<string, unknown>;
    expect(sp).toMatchObject({ max_tokens: 1, ignore_eos: true });
    expect(sp.stop ?? []).toEqual([]);
    expect(sp.stop_token_ids ?? []).toEqual([]);
    await expectHandedOff(cluster, gw);
  });
});
