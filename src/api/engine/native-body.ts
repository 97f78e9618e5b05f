// The response body of a Generate whose relay may end in a native tail (native-tail.ts): an
// IdentityTransformStream the runtime reads natively. The early part (keepalive frames, the
// raw relay's first frames, or connect-es's body when no relay was handed over) is the early
// head's JS-pulled stream, piped in chunk by chunk (a few chunks); then, when the relay handed
// its body's rest over, the tail pipes that in natively and ends the body. A client that leaves
// during the early part fails the pipe's next write, which cancels the early stream (the early
// head's cancel: the client left), besides request.signal.
import { identityPipe } from "../../core/byte-pipe.js";
import type { NativeTail } from "./native-tail.js";

export function withNativeTail(early: ReadableStream<Uint8Array>, tailOf: () => NativeTail | undefined, waitUntil: (p: Promise<unknown>) => void): ReadableStream<Uint8Array> {
  const pipe = identityPipe();
  const relaying = early.pipeTo(pipe.writable, { preventClose: true }).then(
    () => {
      const tail = tailOf();
      return tail ? tail.run(pipe.writable) : pipe.writable.close();
    },
    // The client left (the pipe's write failed, or the early stream was cancelled) or the early
    // stream errored. A relay that handed its body over just before still needs its tail run:
    // it sees the client gone and ends the leg as cancelled (else its end would never come).
    () => tailOf()?.run(pipe.writable),
  );
  waitUntil(relaying.catch(() => undefined));
  return pipe.readable as ReadableStream<Uint8Array>;
}
