// Encodes a LegSpec onto a GenerateRequest (pd-reference 2.4, 2.6, 2.7; ARCHITECTURE
// decision 6 for pixels). Pure: what goes in is decided by the PD plan. The leg's request is a
// shallow copy of the job's (a deep clone copied the prompt's ids and pixels for each leg, and
// showed in a short Generate's profile); what a leg changes below the top level (the sampling
// params, the pixels) is copied before it is changed, so legs never share a change.
import { create } from "@bufbuild/protobuf";
import { KvTransferParamsSchema, SamplingParamsSchema, type GenerateRequest } from "../gen/vllm_engine_pb.js";
import type { LegSampling, LegSpec } from "../core/leg-transport.js";

export function encodeGenerateLeg(req: GenerateRequest, spec: LegSpec): GenerateRequest {
  const r: GenerateRequest = { ...req };
  r.requestId = spec.requestId;
  // Only the gateway sets KV params: a client's would make an engine pull from where it says.
  r.kvTransferParams = undefined;
  r.kvTransferParamsJson = undefined;
  if (spec.sampling) withSampling(r, spec.sampling);
  if (spec.kvParamsJson !== undefined) r.kvTransferParamsJson = spec.kvParamsJson;
  if (spec.kvBootstrap) r.kvTransferParams = create(KvTransferParamsSchema, { remoteHost: spec.kvBootstrap.host, remotePort: spec.kvBootstrap.port });
  if (spec.dataParallelRank !== undefined) r.dataParallelRank = spec.dataParallelRank;
  if (spec.stripPixels && r.mmInputs) r.mmInputs = { ...r.mmInputs, pixelValues: undefined };
  return r;
}

/** A leg's sampling (the prefill cap) over the client's SamplingParams; every other field
 *  (temperature, seed, constraints) unchanged. */
function withSampling(r: GenerateRequest, s: LegSampling): void {
  const sp = r.samplingParams ? { ...r.samplingParams } : create(SamplingParamsSchema);
  sp.maxTokens = s.maxTokens;
  sp.minTokens = s.minTokens;
  sp.n = s.n;
  sp.stop = [...s.stop];
  sp.stopTokenIds = [...s.stopTokenIds];
  sp.ignoreEos = s.ignoreEos;
  sp.logprobs = s.logprobs;
  sp.promptLogprobs = s.promptLogprobs;
  r.samplingParams = sp;
  r.stream = s.stream;
}
