// GatewayError -> ConnectError for the VllmEngine surface, carrying the stable code in the
// `x-gateway-error-code` header (Connect error metadata).
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { GatewayError } from "../../core/errors.js";

export function toConnectError(err: unknown): ConnectError {
  if (err instanceof GatewayError) {
    return new ConnectError(err.message, err.connectCode, { "x-gateway-error-code": err.code });
  }
  if (err instanceof ConnectError) return err;
  console.error(JSON.stringify({ msg: "unexpected error", error: String(err) }));
  return new ConnectError("internal gateway error", Code.Internal, { "x-gateway-error-code": "internal_error" });
}

export function errorCodeOf(err: unknown): string {
  if (err instanceof GatewayError) return err.code;
  if (err instanceof ConnectError) return err.metadata.get("x-gateway-error-code") ?? `connect_${Code[err.code]}`;
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
