// Checks and cleans a client's GenerateRequest before PD planning. Pure. A client may not
// steer KV transfers: any KV params it sends would make an engine pull from an address the
// client chose, so they are dropped here and only the gateway sets them.
import { clone } from "@bufbuild/protobuf";
import { GenerateRequestSchema, type GenerateRequest } from "../../gen/vllm_engine_pb.js";
import { normaliseN } from "../../pd/skip.js";

export type ClientRequestCheck = { ok: true; request: GenerateRequest } | { ok: false; field: string; message: string };

export interface ClientRequestLimits {
  maxN: number;
}

export function checkClientRequest(
  req: GenerateRequest,
  limits: ClientRequestLimits,
  mintRequestId: () => string,
): ClientRequestCheck {
  if (req.input.case === undefined) {
    return { ok: false, field: "input", message: "input: one of tokenized or text is required" };
  }
  if (req.input.case === "tokenized" && req.input.value.inputIds.length === 0) {
    return { ok: false, field: "tokenized.input_ids", message: "tokenized.input_ids: must not be empty" };
  }
  if (req.input.case === "text" && req.input.value.length === 0) {
    return { ok: false, field: "text", message: "text: must not be empty" };
  }
  const n = normaliseN(req.samplingParams?.n);
  if (n > limits.maxN) {
    return { ok: false, field: "sampling_params.n", message: `sampling_params.n: ${n} is above the limit of ${limits.maxN}` };
  }
  if (req.requestId.length > 256) {
    return { ok: false, field: "request_id", message: "request_id: longer than 256 characters" };
  }
  const r = clone(GenerateRequestSchema, req);
  r.kvTransferParams = undefined;
  r.kvTransferParamsJson = undefined;
  if (r.requestId === "") r.requestId = mintRequestId();
  return { ok: true, request: r };
}
