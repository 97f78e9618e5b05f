// The sim's own gRPC-code -> HTTP-status table, used when the OpenAI surface reports a failure
// injected as a Connect code. It is the canonical mapping documented in google/rpc/code.proto
// (what HTTP/JSON transcoders for gRPC services answer), kept apart from the gateway's table in
// src/pd/errors.ts on purpose: the sim is the oracle, so it must be able to disagree with the
// gateway (e.g. CANCELLED is 499 here, FAILED_PRECONDITION 400, DATA_LOSS 500).
import { Code } from "@connectrpc/connect";

const HTTP_STATUS_BY_CODE: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** HTTP status the engine's OpenAI server answers for a failure of this gRPC code. */
export function httpStatusForCode(code: Code): number {
  return HTTP_STATUS_BY_CODE[code] ?? 500;
}
