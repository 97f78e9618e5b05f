// Which decode failures may be sent again, with the same handoff and request id, to another
// decode engine (issue 15; pd-reference 12.1): only those where the engine most likely never
// admitted the request, so the prefill's single-consumer blocks are still there to pull. Any
// decode engine of the NIXL domain can pull them. A client-caused rejection (4xx) is final.
import type { LegFailure } from "../core/leg-transport.js";

export function decodeFailoverAllowed(f: LegFailure): boolean {
  switch (f.kind) {
    case "transport":
      // Refused, or lost before any answer: the engine never read the request.
      return true;
    case "rpc":
    case "status":
      // Capacity pushback, or an engine/proxy error before any frame. A deadline is not:
      // the engine may have admitted the request and be pulling the blocks.
      return f.status === 429 || (f.status >= 500 && f.status !== 504);
    case "read":
    case "malformed":
      // It answered: it may have admitted the request and pulled (or be pulling) the blocks.
      return false;
  }
}
