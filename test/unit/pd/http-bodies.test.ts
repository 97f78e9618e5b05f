import { describe, expect, it } from "vitest";
import { NIXL_PREFILL_PARAMS_JSON, connectorMode, type ConnectorMode } from "../../../src/pd/connector.js";
import { bodyWithSampling, buildEngineBody, harvestKvParams, type OpenAiRoute } from "../../../src/backends/openai-bodies.js";
import { prefillCap } from "../../../src/pd/prefill-cap.js";
import { OPENAI_HTTP_TRAITS } from "../../../src/backends/openai-http-transport.js";
import { fanoutWidth } from "../../../src/api/openai/request.js";
import { planDecodeKv, prefillKvTag, type PdPlan } from "../../../src/pd/plan.js";
import { relayKvParams, shouldSkipPrefill } from "../../../src/pd/skip.js";

/** The plan's decode table as the OpenAI HTTP transport sees it (no typed bootstrap form). */
function planHttpDecodeKv(o: { mode: ConnectorMode; relay: boolean; transferId?: string; harvested?: string; prefillRan: boolean }) {
  const plan: PdPlan = { mode: o.mode, relay: o.relay, skip: !o.prefillRan, pixelsOnPrefillOnly: false, ...(o.transferId !== undefined ? { transferId: o.transferId } : {}) };
  const kv = planDecodeKv(plan, OPENAI_HTTP_TRAITS, o.harvested);
  return {
    injection: kv.injection,
    ...(kv.spec.kvParamsJson !== undefined ? { paramsJson: kv.spec.kvParamsJson } : {}),
    kvTransferFailure: kv.kvTransferFailure,
    mooncakeWithoutId: kv.mooncakeWithoutTypedForm,
  };
}

const CHAT = "/v1/chat/completions" as const;
const COMP = "/v1/completions" as const;
const NIXL: ConnectorMode = { kind: "nixl" };
const PASS: ConnectorMode = { kind: "passthrough" };
const MOON_MODERN = connectorMode({ kvConnector: "MooncakeConnector", kvEngineId: "eng", bootstrapHost: "10.0.0.1" });
const MOON_LEGACY = connectorMode({ kvConnector: "MooncakeConnector", bootstrapHost: "10.0.0.1" });
const MOON_TAG = '{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"xfer-1"}';

/** The prefill leg's body: the client's, with the prefill cap written over it. */
const sanitisePrefillBody = (route: OpenAiRoute, body: Record<string, unknown>, tag: string | undefined) => bodyWithSampling(route, body, prefillCap(), tag);

describe("the prefill body (pd-reference 6, T24)", () => {
  const chat = {
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    max_completion_tokens: 64,
    max_tokens: 64,
    min_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
    n: 1,
    stop: ["\n"],
    seed: 7,
    temperature: 0.3,
    logprobs: true,
    vendor_field: { keep: "me" },
    kv_transfer_params: { do_remote_prefill: true, remote_host: "10.9.9.9" },
  };
  it("T24 chat: max_completion_tokens=1, no max_tokens/min_tokens/stream_options/stop/logprobs, EOS ignored, stream=false, tagged", () => {
    const p = sanitisePrefillBody(CHAT, chat, NIXL_PREFILL_PARAMS_JSON);
    expect(p).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_completion_tokens: 1,
      stream: false,
      n: 1,
      ignore_eos: true,
      seed: 7,
      temperature: 0.3,
      vendor_field: { keep: "me" },
      kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
    });
    expect(JSON.stringify(p.kv_transfer_params)).toBe(NIXL_PREFILL_PARAMS_JSON);
  });
  it.each([
    ["chat without max_completion_tokens -> max_tokens=1", CHAT, { max_tokens: 64 }, { max_tokens: 1 }],
    ["chat with max_completion_tokens null -> max_tokens=1", CHAT, { max_completion_tokens: null }, { max_completion_tokens: null, max_tokens: 1 }],
    ["chat with neither -> max_tokens=1", CHAT, {}, { max_tokens: 1 }],
    ["completions ignores max_completion_tokens", COMP, { max_completion_tokens: 9, max_tokens: 9 }, { max_completion_tokens: 9, max_tokens: 1 }],
    ["n present (n=4) -> 1", COMP, { n: 4 }, { n: 1, max_tokens: 1 }],
    ["n absent stays absent", COMP, {}, { max_tokens: 1 }],
    ["stop dropped and EOS ignored over HTTP as over gRPC", COMP, { stop: "x", ignore_eos: false }, { max_tokens: 1 }],
  ])("%s", (_name, route, extra, expected) => {
    const p = sanitisePrefillBody(route, { model: "m", ...extra }, undefined);
    expect(p).toEqual({ model: "m", stream: false, ignore_eos: true, ...expected });
  });
  it.each([
    ["NIXL", NIXL_PREFILL_PARAMS_JSON, { do_remote_decode: true, do_remote_prefill: false }],
    ["Mooncake", MOON_TAG, { do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-1" }],
    ["passthrough: none, and the client's is dropped", undefined, undefined],
  ])("%s tag", (_name, tag, expected) => {
    const p = sanitisePrefillBody(CHAT, { model: "m", kv_transfer_params: { evil: true } }, tag);
    expect(p.kv_transfer_params).toEqual(expected);
  });
  it("does not mutate the client's body", () => {
    const body = { ...chat };
    sanitisePrefillBody(CHAT, body, NIXL_PREFILL_PARAMS_JSON);
    expect(body).toEqual(chat);
  });
});

describe("prefillKvTag", () => {
  it.each([
    ["NIXL relay", NIXL, true, undefined, NIXL_PREFILL_PARAMS_JSON],
    ["NIXL no relay", NIXL, false, undefined, undefined],
    ["passthrough", PASS, true, undefined, undefined],
    ["Mooncake legacy", MOON_LEGACY, true, undefined, undefined],
    ["Mooncake minted", MOON_MODERN, true, "xfer-1", MOON_TAG],
  ])("%s", (_name, mode, relay, transferId, expected) => {
    expect(prefillKvTag(mode, relay, transferId)).toBe(expected);
  });
});

describe("harvestKvParams", () => {
  it.each([
    ["verbatim bytes", '{"id":"x","kv_transfer_params":{"remote_block_ids": [1, 2],"remote_host":"h"}}', '{"remote_block_ids": [1, 2],"remote_host":"h"}'],
    ["null = none", '{"kv_transfer_params":null}', undefined],
    ["missing = none", '{"choices":[]}', undefined],
    ["non-object = none", '{"kv_transfer_params":"x"}', undefined],
    ["not JSON = none", "<html>oops</html>", undefined],
    ["nested key is not top-level", '{"choices":[{"kv_transfer_params":{"a":1}}]}', undefined],
  ])("%s", (_name, text, expected) => {
    expect(harvestKvParams(text)).toBe(expected);
  });
});

describe("planHttpDecodeKv (HTTP rows of pd-reference 2.7)", () => {
  const P = '{"remote_block_ids":[1]}';
  it.each([
    ["A: Mooncake + engine id + relay -> 5-key minted", { mode: MOON_MODERN, relay: true, transferId: "xfer-1", harvested: P, prefillRan: true },
      { injection: "minted", paramsJson: '{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"xfer-1","remote_engine_id":"eng","remote_bootstrap_addr":"http://10.0.0.1:8998"}', kvTransferFailure: false, mooncakeWithoutId: false }],
    ["Mooncake legacy -> none, warned", { mode: MOON_LEGACY, relay: true, harvested: P, prefillRan: true },
      { injection: "none", kvTransferFailure: false, mooncakeWithoutId: true }],
    ["C: NIXL relay with params -> relayed verbatim", { mode: NIXL, relay: true, harvested: P, prefillRan: true },
      { injection: "relayed", paramsJson: P, kvTransferFailure: false, mooncakeWithoutId: false }],
    ["C: passthrough relay with params -> relayed", { mode: PASS, relay: true, harvested: P, prefillRan: true },
      { injection: "relayed", paramsJson: P, kvTransferFailure: false, mooncakeWithoutId: false }],
    ["D: NIXL relay without params -> failure", { mode: NIXL, relay: true, prefillRan: true },
      { injection: "none", kvTransferFailure: true, mooncakeWithoutId: false }],
    ["E: passthrough without params -> nothing", { mode: PASS, relay: true, prefillRan: true },
      { injection: "none", kvTransferFailure: false, mooncakeWithoutId: false }],
    ["E: NIXL no relay (forced prefill, n>1) -> nothing", { mode: NIXL, relay: false, harvested: P, prefillRan: true },
      { injection: "none", kvTransferFailure: false, mooncakeWithoutId: false }],
    ["skipped prefill -> nothing", { mode: NIXL, relay: false, prefillRan: false },
      { injection: "none", kvTransferFailure: false, mooncakeWithoutId: false }],
  ])("%s", (_name, opts, expected) => {
    expect(planHttpDecodeKv(opts)).toEqual(expected);
  });
});

describe("buildEngineBody", () => {
  it("forwards the client's bytes unchanged when there is nothing to add", () => {
    const text = '{"model":"m",  "n":3, "x_vendor":{"a":[1]}}';
    expect(buildEngineBody(text, undefined)).toBe(text);
  });
  it("adds kv_transfer_params and drops the client's own", () => {
    const out = buildEngineBody('{"kv_transfer_params":{"remote_host":"evil"},"model":"m","n":1}', '{"a": 1}');
    expect(out).toBe('{"kv_transfer_params":{"a": 1},"model":"m","n":1}');
  });
});

describe("fanoutWidth and the shared skip predicate over HTTP (decision 1)", () => {
  it.each([
    [CHAT, {}, 1],
    [CHAT, { n: null }, 1],
    [CHAT, { n: 3 }, 3],
    [COMP, { prompt: "a" }, 1],
    [COMP, { prompt: [1, 2, 3] }, 1],
    [COMP, { prompt: ["a", "b"] }, 2],
    [COMP, { prompt: [[1], [2], [3]], n: 2 }, 6],
  ])("%s %j -> %i", (route, body, width) => {
    expect(fanoutWidth(route, body)).toBe(width);
  });
  it.each([1, 2, 3, 16])("n=%i skips iff n > 1, for every connector (no bootstrap form over HTTP)", (n) => {
    const skip = shouldSkipPrefill({ relayKvParams: relayKvParams(n), hasEncodeAssignments: false, hasMmInputs: false, decodeNeedsPrefillBootstrap: false });
    expect(skip).toBe(n > 1);
  });
});
