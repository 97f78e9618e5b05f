// Checks and cleans a client's GenerateRequest before PD planning. Pure. A client may not
// steer KV transfers: any KV params it sends would make an engine pull from an address the
// client chose, so they are dropped here and only the gateway sets them. Protobuf takes what
// vLLM must not (issue 32): a request id with a newline (the servicer uses it as it is, in
// its logs and KV-transfer messages) and NaN or infinite sampling floats (NaN passes vLLM's
// range checks), so both are refused here, naming the field.
import { ScalarType } from "@bufbuild/protobuf";
import { SamplingParamsSchema, type GenerateRequest, type SamplingParams } from "../../gen/vllm_engine_pb.js";
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
  const idProblem = requestIdProblem(req.requestId);
  if (idProblem) return { ok: false, field: "request_id", message: `request_id: ${idProblem}` };
  const float = req.samplingParams && nonFiniteFloat(req.samplingParams);
  if (float) return { ok: false, field: float, message: `${float}: must be a finite number` };
  // A shallow copy: only top-level fields change here (encodeGenerateLeg copies what it changes).
  const r: GenerateRequest = { ...req, kvTransferParams: undefined, kvTransferParamsJson: undefined };
  if (r.requestId === "") r.requestId = mintRequestId();
  return { ok: true, request: r };
}

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Why a client's request id may not reach an engine, or undefined when it may. */
export function requestIdProblem(id: string): string | undefined {
  return CONTROL.test(id) ? "must not contain control characters (a newline, a tab, ...)" : undefined;
}

/** SamplingParams' float fields, from the descriptor: a field added to the proto is covered. */
let floatFields: { local: string; name: string; map: boolean }[] | undefined;
const isFloat = (t: ScalarType | undefined) => t === ScalarType.FLOAT || t === ScalarType.DOUBLE;

/** The first NaN or infinite float of the sampling params, as `sampling_params.<field>`. */
export function nonFiniteFloat(sp: SamplingParams): string | undefined {
  floatFields ??= SamplingParamsSchema.fields.flatMap((f) =>
    (f.fieldKind === "scalar" && isFloat(f.scalar)) || (f.fieldKind === "map" && f.mapKind === "scalar" && isFloat(f.scalar))
      ? [{ local: f.localName, name: f.name, map: f.fieldKind === "map" }]
      : [],
  );
  const values = sp as unknown as Record<string, unknown>;
  for (const f of floatFields) {
    const v = values[f.local];
    if (f.map) {
      for (const [k, x] of Object.entries(v as Record<string, number>)) if (!Number.isFinite(x)) return `sampling_params.${f.name}[${k}]`;
    } else if (typeof v === "number" && !Number.isFinite(v)) {
      return `sampling_params.${f.name}`;
    }
  }
  return undefined;
}
