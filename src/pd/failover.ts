// Which decode failures (before decode's first frame) may be sent again, with the same handoff
// and request id, to another decode engine (issue 15; pd-reference 12.1). Any decode engine of
// the NIXL domain can pull the prefill's blocks. Failing over costs at most a recompute: if the
// first engine did pull them, the second one's pull is refused and it computes the prompt. Not
// failing over strands the blocks until the lease, and a client's retry pins a second handoff.
// So every engine-side failure fails over except a deadline (the engine may still be pulling,
// and is aborted), and a client-caused rejection (4xx) is final.
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
      // The answer broke off or could not be decoded before any frame: a broken engine or
      // connection, whether or not it had pulled the blocks.
      return true;
  }
}
