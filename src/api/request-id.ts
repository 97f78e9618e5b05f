// The request id every HTTP surface answers with and passes to its engines: the client's
// x-request-id (so its logs and the engines' match), else a fresh one.
import { GatewayError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";

const MAX_REQUEST_ID_CHARS = 256;

export function requestIdOf(headers: Headers): string {
  const sent = headers.get("x-request-id");
  if (sent === null || sent === "") return uuidv7();
  if (sent.length > MAX_REQUEST_ID_CHARS || !/^[\x21-\x7e]+$/.test(sent)) {
    throw new GatewayError("invalid_request", 400, `x-request-id: at most ${MAX_REQUEST_ID_CHARS} visible ASCII characters`, undefined, "x-request-id");
  }
  return sent;
}
