// Pure parts of registration discovery: upstream's label flattening and the model check.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetModelInfoResponseSchema, GetServerInfoResponseSchema } from "../../../src/gen/vllm_engine_pb.js";
import { checkServedModel, flattenHttpModel, flattenVllmInfo } from "../../../src/routing/discovery.js";
import { GatewayError } from "../../../src/core/errors.js";

describe("flattenVllmInfo", () => {
  it("keeps set fields, drops empty strings and zeros and the volatile fields, renames dp size", () => {
    const server = create(GetServerInfoResponseSchema, {
      activeRequests: 7, isPaused: true, lastReceiveTimestamp: 12.5, uptimeSeconds: 99, serverType: "vllm-grpc",
      kvConnector: "MooncakeConnector", kvRole: "kv_producer", kvEngineId: "", dataParallelSize: 2,
    });
    const model = create(GetModelInfoResponseSchema, {
      servedModelName: "m", modelPath: "/models/m", isGeneration: true, supportsVision: false, maxContextLength: 32768,
      vocabSize: 50000, eosTokenIds: [2], architectures: [], padTokenId: 0, maxReqInputLen: 0,
    });
    expect(flattenVllmInfo(server, model)).toEqual({
      served_model_name: "m",
      model_path: "/models/m",
      is_generation: true,
      supports_vision: false,
      max_context_length: 32768,
      vocab_size: 50000,
      eos_token_ids: [2],
      kv_connector: "MooncakeConnector",
      kv_role: "kv_producer",
      dp_size: 2,
    });
  });
});

describe("flattenHttpModel", () => {
  it.each([
    [{ id: "m", object: "model", root: "/models/m", max_model_len: 4096, owned_by: "vllm" }, { served_model_name: "m", model_path: "/models/m", max_context_length: 4096, owned_by: "vllm" }],
    [{ id: "m", root: "", max_model_len: 0 }, { served_model_name: "m" }],
    [{ id: "m", max_model_len: "big" }, { served_model_name: "m" }],
  ])("%j", (m, out) => {
    expect(flattenHttpModel(m)).toEqual(out);
  });
});

describe("checkServedModel", () => {
  it("passes an exact match", () => {
    expect(() => checkServedModel("m", ["x", "m"])).not.toThrow();
  });
  it.each([
    ["M", ["m"], 'model: the engine serves "m", not "M"'],
    ["m", ["a", "b"], 'model: the engine serves "a", "b", not "m"'],
    ["m", [""], 'model: the engine serves no model name, not "m"'],
    ["m", [], 'model: the engine serves no model name, not "m"'],
  ])("%s in %j -> 400", (model, served, message) => {
    try {
      checkServedModel(model, served);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ code: "engine_model_mismatch", status: 400, param: "model", message });
    }
  });
});
