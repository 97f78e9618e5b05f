// A failed VllmEngine call as a leg failure. Apart from the transport because ConnectError's
// module pulls protobuf's runtime: loaded with the first call (vllm-engine-transport.ts).
import { Code, ConnectError } from "@connectrpc/connect";
import { httpStatusForCode } from "../core/errors.js";
import { LegFailure } from "../core/leg-transport.js";

/** Codes connect-es raises itself when an engine's bytes cannot be decoded: a broken engine,
 *  not a client mistake, so never passed on as invalid_argument. */
const DECODE_FAILURE_CODES: ReadonlySet<Code> = new Set([Code.InvalidArgument, Code.Internal, Code.DataLoss, Code.Unknown]);

export function rpcFailure(err: unknown): LegFailure {
  const ce = ConnectError.from(err);
  // An error the engine sent carries its metadata; one connect-es raised while reading the
  // response (a garbled or truncated frame) has none.
  const fromEngine = ce.metadata.has("content-type") || ce.metadata.has("grpc-status") || ce.metadata.has("grpc-message");
  if (!fromEngine && DECODE_FAILURE_CODES.has(ce.code) && /parse|decode|premature|envelope|invalid|unexpected|protobuf|wire/i.test(ce.rawMessage)) {
    return new LegFailure("malformed", 502, ce.rawMessage, Code.Unavailable);
  }
  // The runtime's own error (the connection refused, reset or lost: the engine crashed or was
  // killed), which connect-es wraps as UNKNOWN, a 500 as if the engine had failed internally.
  // gRPC clients report it as UNAVAILABLE (tonic does, upstream): 503 naming the engine.
  if (!fromEngine && ce.code === Code.Unknown && ce.cause instanceof Error && !(ce.cause instanceof ConnectError)) {
    return new LegFailure("rpc", httpStatusForCode(Code.Unavailable), ce.rawMessage, Code.Unavailable);
  }
  return new LegFailure("rpc", httpStatusForCode(ce.code), ce.rawMessage, ce.code);
}
