// Encodes a LegSpec onto a GenerateRequest (pd-reference 2.4, 2.6, 2.7; ARCHITECTURE
// decision 6 for pixels). Pure: what goes in is decided by the PD plan.
import { clone, create } from "@bufbuild/protobuf";
import { GenerateRequestSchema, KvTransferParamsSchema, SamplingParamsSchema, type GenerateRequest } from "../gen/vllm_engine_pb.js";
import type { LegSpec } from "../core/leg-transport.js";

export function encodeGenerateLeg(req: GenerateRequest, spec: LegSpec): GenerateRequest {
  const r = clone(GenerateRequestSchema, req);
  r.requestId = spec.requestId;
  // Only the gateway sets KV params: a client's would make an engine pull from where it says.
  r.kvTransferParams = undefined;
  r.kvTransferParamsJson = undefined;
  if (spec.leg === "prefill") capForHandoff(r);
  if (spec.kvParamsJson !== undefined) r.kvTransferParamsJson = spec.kvParamsJson;
  if (spec.kvBootstrap) r.kvTransferParams = create(KvTransferParamsSchema, { remoteHost: spec.kvBootstrap.host, remotePort: spec.kvBootstrap.port });
  if (spec.dataParallelRank !== undefined) r.dataParallelRank = spec.dataParallelRank;
  if (spec.stripPixels && r.mmInputs) r.mmInputs.pixelValues = undefined;
  return r;
}

/** The prefill leg: a length-capped, non-streamed, single-sample finish makes the engine
 *  return its handoff; every other sampling field (temperature, seed, constraints) unchanged. */
function capForHandoff(r: GenerateRequest): void {
  const sp = r.samplingParams ?? create(SamplingParamsSchema);
  sp.maxTokens = 1;
  sp.minTokens = 0;
  sp.n = 1;
  sp.stop = [];
  sp.stopTokenIds = [];
  sp.ignoreEos = true;
  r.samplingParams = sp;
  r.stream = false;
}
