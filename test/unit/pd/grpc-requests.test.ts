import { create, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GenerateRequestSchema, type GenerateRequest } from "../../../src/gen/vllm_engine_pb.js";
import { encodeGenerateLeg } from "../../../src/backends/generate-request.js";
import { vllmEngineTransport } from "../../../src/backends/vllm-engine-transport.js";
import { planDecodeKv, prefillKvTag, type PdPlan } from "../../../src/pd/plan.js";
import { prefillCap } from "../../../src/pd/prefill-cap.js";
import { NIXL_PREFILL_PARAMS_JSON, connectorMode, type ConnectorMode } from "../../../src/pd/connector.js";

function request(n = 1, extra: Omit<MessageInitShape<typeof GenerateRequestSchema>, "$typeName"> = {}): GenerateRequest {
  return create(GenerateRequestSchema, {
    requestId: "req-1",
    input: { case: "text", value: "hello world" },
    samplingParams: { maxTokens: 64, minTokens: 5, n, stop: ["\n"], stopTokenIds: [7], temperature: 0.5, seed: 42 },
    stream: true,
    ...extra,
  });
}
// The plan's prefill tag and decode table, encoded by the VllmEngine transport: the same
// functions the executor calls.
const TRAITS = vllmEngineTransport(() => {
  throw new Error("no I/O in this test");
}).traits;

function buildPrefillRequest(req: GenerateRequest, o: { mode: ConnectorMode; relay: boolean; transferId?: string; dpRank?: number }): GenerateRequest {
  const tag = prefillKvTag(o.mode, o.relay, o.transferId);
  return encodeGenerateLeg(req, {
    leg: "prefill",
    requestId: req.requestId,
    sampling: prefillCap(),
    ...(tag !== undefined ? { kvParamsJson: tag } : {}),
    ...(o.dpRank !== undefined ? { dataParallelRank: o.dpRank } : {}),
  });
}

function buildDecodeRequest(req: GenerateRequest, o: { mode: ConnectorMode; relay: boolean; transferId?: string; harvested?: string; dpRank?: number; prefillRan: boolean }) {
  const plan: PdPlan = {
    mode: o.mode,
    relay: o.relay,
    skip: !o.prefillRan,
    pixelsOnPrefillOnly: req.mmInputs !== undefined,
    ...(o.transferId !== undefined ? { transferId: o.transferId } : {}),
    ...(o.dpRank !== undefined ? { decodeDpRank: o.dpRank } : {}),
  };
  const kv = planDecodeKv(plan, TRAITS, o.harvested);
  return {
    request: encodeGenerateLeg(req, { ...kv.spec, requestId: req.requestId }),
    injection: kv.injection,
    kvTransferFailure: kv.kvTransferFailure,
    pixelsStripped: kv.spec.stripPixels === true,
  };
}

const json = (r: GenerateRequest) => toJson(GenerateRequestSchema, r) as Record<string, unknown>;
const NIXL: ConnectorMode = { kind: "nixl" };
const PASS: ConnectorMode = { kind: "passthrough" };
const MOON_MODERN = connectorMode({ kvConnector: "MooncakeConnector", kvEngineId: "eng", bootstrapHost: "10.0.0.1" });
const MOON_LEGACY = connectorMode({ kvConnector: "MooncakeConnector", bootstrapHost: "10.0.0.1" });
const pixels = { pixelValues: { shape: [1, 3], dtype: "float32", payload: { case: "inline" as const, value: new Uint8Array([1, 2, 3]) } }, mmHashes: ["h1"] };

describe("buildPrefillRequest (pd-reference 2.4, T1)", () => {
  it("sanitises sampling, keeps the rest and the request id", () => {
    const p = buildPrefillRequest(request(), { mode: NIXL, relay: true });
    expect(p.requestId).toBe("req-1");
    expect(p.stream).toBe(false);
    const sp = p.samplingParams!;
    expect([sp.maxTokens, sp.minTokens, sp.n, sp.stop, sp.stopTokenIds, sp.ignoreEos]).toEqual([1, 0, 1, [], [], true]);
    expect([sp.temperature, sp.seed]).toEqual([0.5, 42]);
    expect(p.kvTransferParamsJson).toBe(NIXL_PREFILL_PARAMS_JSON);
    expect(p.dataParallelRank).toBeUndefined();
  });
  it("creates sampling params when absent", () => {
    const p = buildPrefillRequest(create(GenerateRequestSchema, { requestId: "r", input: { case: "text", value: "x" } }), { mode: PASS, relay: true });
    expect(p.samplingParams?.maxTokens).toBe(1);
  });
  it.each([
    ["NIXL relay", NIXL, true, undefined, NIXL_PREFILL_PARAMS_JSON],
    ["NIXL no relay", NIXL, false, undefined, undefined],
    ["passthrough", PASS, true, undefined, undefined],
    ["Mooncake legacy", MOON_LEGACY, true, undefined, undefined],
    ["Mooncake minted (T5)", MOON_MODERN, true, "xfer-1", '{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"xfer-1"}'],
  ])("%s tag", (_name, mode, relay, transferId, expected) => {
    const p = buildPrefillRequest(request(), { mode, relay, transferId });
    expect(p.kvTransferParamsJson).toBe(expected);
    expect(p.kvTransferParams).toBeUndefined();
  });
  it("pins the prefill DP rank, 0 distinguishable from unset (T23)", () => {
    expect(buildPrefillRequest(request(), { mode: NIXL, relay: true, dpRank: 0 }).dataParallelRank).toBe(0);
  });
  it("keeps pixels on prefill", () => {
    const p = buildPrefillRequest(request(1, { mmInputs: pixels as never }), { mode: NIXL, relay: true });
    expect(p.mmInputs?.pixelValues?.shape).toEqual([1, 3]);
  });
  it("does not mutate the client's request", () => {
    const r = request();
    buildPrefillRequest(r, { mode: NIXL, relay: true });
    expect(r.samplingParams?.maxTokens).toBe(64);
    expect(r.samplingParams?.stop).toEqual(["\n"]);
    expect(r.stream).toBe(true);
  });
  it("legs built from one request share no change (the copy is shallow)", () => {
    const r = request(1, { mmInputs: pixels as never, kvTransferParamsJson: "{\"from\":\"client\"}" });
    const prefill = buildPrefillRequest(r, { mode: NIXL, relay: true, dpRank: 2 });
    const decode = buildDecodeRequest(r, { mode: NIXL, relay: true, harvested: "{\"h\":1}", prefillRan: true }).request;
    // the decode leg's stripped pixels are not stripped from the request or the prefill leg
    expect(decode.mmInputs?.pixelValues).toBeUndefined();
    expect(prefill.mmInputs?.pixelValues?.shape).toEqual([1, 3]);
    expect(r.mmInputs?.pixelValues?.shape).toEqual([1, 3]);
    // the prefill cap changed the prefill leg's sampling only
    expect(prefill.samplingParams).not.toBe(r.samplingParams);
    expect(decode.samplingParams?.maxTokens).toBe(64);
    expect(r.samplingParams?.maxTokens).toBe(64);
    // KV params and the DP rank are per leg, the request's own untouched
    expect(prefill.dataParallelRank).toBe(2);
    expect(r.dataParallelRank).toBeUndefined();
    expect(decode.kvTransferParamsJson).toBe("{\"h\":1}");
    expect(r.kvTransferParamsJson).toBe("{\"from\":\"client\"}");
  });
});

describe("buildDecodeRequest (pd-reference 2.7 rows A-E)", () => {
  it("A: Mooncake minted -> 5-key JSON", () => {
    const d = buildDecodeRequest(request(), { mode: MOON_MODERN, relay: true, transferId: "xfer-1", prefillRan: true });
    expect(d.injection).toBe("minted");
    expect(JSON.parse(d.request.kvTransferParamsJson!)).toEqual({
      do_remote_decode: false, do_remote_prefill: true, transfer_id: "xfer-1", remote_engine_id: "eng", remote_bootstrap_addr: "http://10.0.0.1:8998",
    });
    expect(d.request.kvTransferParams).toBeUndefined();
  });
  it("B: Mooncake legacy (or n>1 with an engine id, T12) -> typed host/port, harvested JSON ignored", () => {
    for (const [mode, relay] of [[MOON_LEGACY, true], [MOON_MODERN, false]] as const) {
      const d = buildDecodeRequest(request(relay ? 1 : 4), { mode, relay, harvested: '{"x":1}', prefillRan: true });
      expect(d.injection).toBe("legacy");
      expect([d.request.kvTransferParams?.remoteHost, d.request.kvTransferParams?.remotePort]).toEqual(["10.0.0.1", 8998]);
      expect(d.request.kvTransferParamsJson).toBeUndefined();
    }
  });
  it("C: NIXL / passthrough relay the harvested string verbatim", () => {
    const harvested = '{"do_remote_prefill": true,  "remote_block_ids":[1,2]}';
    for (const mode of [NIXL, PASS]) {
      const d = buildDecodeRequest(request(), { mode, relay: true, harvested, prefillRan: true });
      expect(d.injection).toBe("relayed");
      expect(d.request.kvTransferParamsJson).toBe(harvested);
    }
  });
  it("D: NIXL without a handoff -> kv transfer failure, nothing injected (T2)", () => {
    const d = buildDecodeRequest(request(), { mode: NIXL, relay: true, prefillRan: true });
    expect([d.injection, d.kvTransferFailure, d.request.kvTransferParamsJson]).toEqual(["none", true, undefined]);
  });
  it("E: passthrough without a handoff, or any skipped fan-out -> nothing (T4, T8)", () => {
    const a = buildDecodeRequest(request(), { mode: PASS, relay: true, prefillRan: true });
    expect([a.injection, a.kvTransferFailure]).toEqual(["none", false]);
    const b = buildDecodeRequest(request(4), { mode: NIXL, relay: false, prefillRan: false, dpRank: 3 });
    expect([b.injection, b.kvTransferFailure]).toEqual(["none", false]);
    // T8: decode == original except the DP pin.
    expect(json(b.request)).toEqual({ ...json(request(4)), dataParallelRank: 3 });
  });
  it("decode keeps the original sampling params and stream flag", () => {
    const d = buildDecodeRequest(request(), { mode: NIXL, relay: true, harvested: "{}", prefillRan: true });
    expect(d.request.samplingParams?.maxTokens).toBe(64);
    expect(d.request.samplingParams?.stop).toEqual(["\n"]);
    expect(d.request.stream).toBe(true);
    expect(d.request.requestId).toBe("req-1");
  });
  it("decision 6: pixels dropped with a handoff, kept without one (T10)", () => {
    const withHandoff = buildDecodeRequest(request(1, { mmInputs: pixels as never }), { mode: NIXL, relay: true, harvested: "{}", prefillRan: true });
    expect(withHandoff.pixelsStripped).toBe(true);
    expect(withHandoff.request.mmInputs?.pixelValues).toBeUndefined();
    expect(withHandoff.request.mmInputs?.mmHashes).toEqual(["h1"]);
    const fanout = buildDecodeRequest(request(4, { mmInputs: pixels as never }), { mode: NIXL, relay: false, prefillRan: true });
    expect(fanout.pixelsStripped).toBe(false);
    expect(fanout.request.mmInputs?.pixelValues?.shape).toEqual([1, 3]);
  });
});
