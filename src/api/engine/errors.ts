// GatewayError -> ConnectError for the VllmEngine surface's handlers, carrying the stable code
// in the `x-gateway-error-code` header (Connect error metadata). The Connect code is the
// error's (the code table, core/error-codes.ts); a failure that is not a GatewayError is a bug
// (errors/render.ts), except connect-es's own errors, which keep their code.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { GatewayError } from "../../core/errors.js";
import { ERROR_CODE_HEADER } from "../../errors/header.js";
import { toGatewayError } from "../../errors/render.js";

export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const e = toGatewayError(err, "VllmEngine surface");
  return new ConnectError(e.message, e.connectCode, { [ERROR_CODE_HEADER]: e.code });
}

export function errorCodeOf(err: unknown): string {
  if (err instanceof GatewayError) return err.code;
  if (err instanceof ConnectError) return err.metadata.get(ERROR_CODE_HEADER) ?? `connect_${Code[err.code]}`;
  return "internal_error";
}

/** The surface's one error mapping, as a Connect server interceptor: whatever a handler
 *  throws (before its answer, or while streaming it) reaches the client as a ConnectError
 *  carrying the stable code. Handlers throw GatewayErrors and never convert them themselves. */
export const gatewayErrorInterceptor: Interceptor = (next) => async (req) => {
  try {
    const res = await next(req);
    return res.stream ? { ...res, message: mapped(res.message) } : res;
  } catch (err) {
    throw toConnectError(err);
  }
};

async function* mapped<T>(messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw toConnectError(err);
  }
}
