// The HTTP PD flow on the Responses and Messages APIs (vLLM PRs 37424 and 37535): a prefill
// leg carrying do_remote_decode returns the handoff in the body's kv_transfer_params, a decode
// leg carrying them pulls it (single consumer), and a refused decode frees it at once.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detokenize, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, postJson, resetAll, stats } from "./helpers.js";

let c: RunningCluster;
let oa: { p: OpenAI; d: OpenAI };
let an: { p: Anthropic; d: Anthropic };
const MODEL = "m-pd";
const PROMPT = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" "); // 3 blocks
const ids = tokenize(PROMPT);
const PREFILL = { do_remote_decode: true, do_remote_prefill: false };
const EOS_FIRST = { headers: { "x-sim-fault": '{"eosAfter":1}' } };
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
// The vLLM extensions the SDK types do not know.
const ext = <T>(body: T & Record<string, unknown>) => body as T;

beforeAll(async () => {
  c = await cluster([
    { name: "p", role: "prefill", kvConnector: "NixlConnector", model: MODEL, latency: FAST },
    { name: "d", role: "decode", kvConnector: "NixlConnector", model: MODEL, latency: FAST },
  ]);
  const [p, d] = [c.engine("p").url, c.engine("d").url];
  oa = { p: new OpenAI({ baseURL: `${p}/v1`, apiKey: "x", maxRetries: 0 }), d: new OpenAI({ baseURL: `${d}/v1`, apiKey: "x", maxRetries: 0 }) };
  an = { p: new Anthropic({ baseURL: p, apiKey: "x", maxRetries: 0 }), d: new Anthropic({ baseURL: d, apiKey: "x", maxRetries: 0 }) };
});
afterAll(() => c.close());
beforeEach(async () => {
  await Promise.all(c.engines.map((e) => fetch(`${e.url}/sim/faults`, { method: "DELETE" })));
  await resetAll(c);
});

/** The producer's handoff went to exactly one pull, and the decode computed no prompt. */
async function expectPulledOnce(): Promise<void> {
  expect(await stats(c.engine("p"))).toMatchObject({ kvPullsServed: 1, blocksPinned: 0, handoffsPinned: 0, prefillComputations: 1 });
  expect(await stats(c.engine("d"))).toMatchObject({ kvPullsCompleted: 1, promptTokensComputed: 0, kvRecomputes: 0 });
}

describe("Responses API", () => {
  it("prefill returns the handoff; the streamed decode pulls it; a second decode recomputes", async () => {
    const pre = (await oa.p.responses.create(ext({ model: MODEL, input: PROMPT, max_output_tokens: 1, ignore_eos: true, kv_transfer_params: PREFILL }))) as Json;
    expect(pre.status).toBe("incomplete");
    expect(pre.kv_transfer_params).toEqual({
      do_remote_prefill: true, do_remote_decode: false, remote_block_ids: expect.any(Array),
      remote_engine_id: "p", remote_request_id: `${pre.id}_0`, remote_host: "127.0.0.1", remote_port: c.engine("p").spec.port, tp_size: 1,
    });
    expect(pre.kv_transfer_params.remote_block_ids).toHaveLength(3);
    expect((await stats(c.engine("p"))).handoffsPinned).toBe(1);

    const stream = oa.d.responses.stream(ext({ model: MODEL, input: PROMPT, max_output_tokens: 6, kv_transfer_params: pre.kv_transfer_params }));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(detokenize(outputTokenIds(ids, undefined, 0, 6)));
    expect(final.usage?.input_tokens_details.cached_tokens).toBe(ids.length);
    await expectPulledOnce();

    // Single consumer: the same params again find nothing to pull.
    const again = await oa.d.responses.create(ext({ model: MODEL, input: PROMPT, max_output_tokens: 2, kv_transfer_params: pre.kv_transfer_params }));
    expect(again.usage?.input_tokens_details.cached_tokens).toBe(0);
    expect((await stats(c.engine("p"))).kvPullsRefused).toBe(1);
    expect(await stats(c.engine("d"))).toMatchObject({ kvRecomputes: 1, promptTokensComputed: ids.length });
  });

  it("a prefill whose one token is EOS keeps its handoff with ignore_eos (NIXL hands off length-capped requests)", async () => {
    const pre = (await oa.p.responses.create(ext({ model: MODEL, input: PROMPT, max_output_tokens: 1, ignore_eos: true, kv_transfer_params: PREFILL }), EOS_FIRST)) as Json;
    expect(pre.status).toBe("incomplete");
    expect(pre.kv_transfer_params).toMatchObject({ do_remote_prefill: true });
    expect((await stats(c.engine("p"))).handoffsPinned).toBe(1);
    const noIgnore = (await oa.p.responses.create(ext({ model: MODEL, input: PROMPT, max_output_tokens: 1, kv_transfer_params: PREFILL }), EOS_FIRST)) as Json;
    expect(noIgnore).toMatchObject({ status: "completed", kv_transfer_params: null });
    expect((await stats(c.engine("p"))).handoffsPinned).toBe(1);
  });

  it("a decode refused before admission (an unknown previous_response_id) frees the handoff at once", async () => {
    const pre = (await oa.p.responses.create(ext({ model: MODEL, input: PROMPT, max_output_tokens: 1, ignore_eos: true, kv_transfer_params: PREFILL }))) as Json;
    const r = await postJson(`${c.engine("d").url}/v1/responses`, { model: MODEL, input: PROMPT, previous_response_id: "resp_gone", kv_transfer_params: pre.kv_transfer_params });
    expect(r.status).toBe(404);
    expect(await stats(c.engine("p"))).toMatchObject({ transfersRejected: 1, handoffsPinned: 0, kvPullsServed: 0 });
    expect(await stats(c.engine("d"))).toMatchObject({ kvReleasesSent: 1, promptTokensComputed: 0 });
  });
});

describe("Messages API", () => {
  it("prefill returns the handoff; messages.stream() on decode pulls it", async () => {
    const pre = (await an.p.messages.create(ext({ model: MODEL, max_tokens: 1, messages: [{ role: "user", content: PROMPT }], kv_transfer_params: PREFILL }), { headers: { "x-request-id": "mp-1" } })) as Json;
    expect(pre).toMatchObject({ stop_reason: "max_tokens", kv_transfer_params: { do_remote_prefill: true, remote_request_id: "mp-1", remote_engine_id: "p", remote_port: c.engine("p").spec.port } });
    const final = await an.d.messages.stream(ext({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content: PROMPT }], kv_transfer_params: pre.kv_transfer_params })).finalMessage();
    expect(final.content).toEqual([{ type: "text", text: detokenize(outputTokenIds(ids, undefined, 0, 5)) }]);
    await expectPulledOnce();
  });

  it("a prefill whose one token is EOS loses the handoff: the API has no ignore_eos", async () => {
    const pre = (await an.p.messages.create(ext({ model: MODEL, max_tokens: 1, ignore_eos: true, messages: [{ role: "user", content: PROMPT }], kv_transfer_params: PREFILL }), EOS_FIRST)) as Json;
    expect(pre.stop_reason).toBe("end_turn");
    expect("kv_transfer_params" in pre).toBe(false);
    expect(await stats(c.engine("p"))).toMatchObject({ handoffsPinned: 0, blocksPinned: 0 });
  });

  it("a decode refused before admission (context window) frees the handoff; the error is Anthropic's", async () => {
    const pre = (await an.p.messages.create(ext({ model: MODEL, max_tokens: 1, messages: [{ role: "user", content: PROMPT }], kv_transfer_params: PREFILL }))) as Json;
    const r = await postJson(`${c.engine("d").url}/v1/messages`, { model: MODEL, max_tokens: 32_768, stream: true, messages: [{ role: "user", content: PROMPT }], kv_transfer_params: pre.kv_transfer_params });
    expect(r.status).toBe(400);
    expect(((await r.json()) as Json).type).toBe("error");
    expect(await stats(c.engine("p"))).toMatchObject({ transfersRejected: 1, handoffsPinned: 0 });
    expect((await stats(c.engine("d"))).kvReleasesSent).toBe(1);
  });

  it("dropConnection applies to both routes, before the body is read", async () => {
    await postJson(`${c.engine("d").url}/sim/faults`, { dropConnection: true, count: 2 });
    await expect(postJson(`${c.engine("d").url}/v1/messages`, { model: MODEL, max_tokens: 1, messages: [] })).rejects.toThrow();
    await expect(postJson(`${c.engine("d").url}/v1/responses`, { input: "x" })).rejects.toThrow();
    expect((await stats(c.engine("d"))).connectionsDropped).toBe(2);
  });
});
