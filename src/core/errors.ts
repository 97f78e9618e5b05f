// The gateway-wide error type (its Connect code from the code table, error-codes.ts) and the
// gRPC code -> HTTP status map (pd-reference 2.10). src/errors/ renders a GatewayError in each
// protocol's shape; nothing here knows about a surface, an engine transport or the PD pipeline.
import { connectCodeFor } from "./error-codes.js";
import { Code } from "./grpc-code.js";

export class GatewayError extends Error {
  override name = "GatewayError";
  /** Connect code for Connect and gRPC-web clients: the one given (an engine's own gRPC
   *  code), else the code table's (error-codes.ts). */
  readonly connectCode: Code;
  constructor(
    /** Stable machine-readable code, e.g. "prefill_worker_failed_to_start". */
    readonly code: string,
    /** HTTP status for the OpenAI surface and metrics. */
    readonly status: number,
    message: string,
    connectCode?: Code,
    /** Client-visible field the error is about, when it is a validation error. */
    readonly param?: string,
  ) {
    super(message);
    this.connectCode = connectCode ?? connectCodeFor(code, status);
  }

  /** The engine (configured name) whose failure this is, so a retry can avoid it. */
  engine?: string;

  /** False when re-running the pipeline would do harm (a KV handoff is already pinned for
   *  this request); otherwise the status decides. */
  retryable?: boolean;

  /** Tags the error with the engine that caused it; returns the error. */
  from(engine: string): this {
    this.engine = engine;
    return this;
  }
}

/** An engine answered with an error status: a streaming OpenAI request renders it as one SSE
 *  error event (the client asked for an event stream), everything else as a plain error. */
export class UpstreamStatusError extends GatewayError {
  override name = "UpstreamStatusError";
}

/** gRPC code -> HTTP status, as upstream's tonic mapping (Canceled counts as a client error). */
export function httpStatusForCode(code: Code): number {
  switch (code) {
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
    case Code.Canceled:
      return 400;
    case Code.Unauthenticated:
      return 401;
    case Code.PermissionDenied:
      return 403;
    case Code.NotFound:
      return 404;
    case Code.AlreadyExists:
    case Code.Aborted:
      return 409;
    case Code.ResourceExhausted:
      return 429;
    case Code.Unavailable:
      return 503;
    case Code.DeadlineExceeded:
      return 504;
    case Code.Unimplemented:
      return 501;
    default:
      return 500;
  }
}

/** Statuses that count as engine failures for breakers and retries (upstream defaults). */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/** The client went away before the response was complete (status 499, as nginx logs it). */
export function clientCancelledError(): GatewayError {
  return new GatewayError("client_cancelled", 499, "client cancelled the request");
}

/** The client's Abort call ended the request before any engine answered it (its prefill leg
 *  was running, or it was between attempts): what its Generate call ends with. */
export function requestAbortedError(): GatewayError {
  return new GatewayError("request_aborted", 499, "the request was aborted by an Abort call");
}

/** A failure's message without stack or class noise. */
export function errorText(err: unknown): string {
  if (isConnectError(err)) return err.rawMessage;
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/** `err instanceof ConnectError` without importing ConnectError, whose module pulls protobuf's
 *  runtime and descriptors into the isolate's start-up. */
export function isConnectError(err: unknown): err is Error & { code: Code; rawMessage: string } {
  return err instanceof Error && err.name === "ConnectError" && typeof (err as { rawMessage?: unknown }).rawMessage === "string";
}
