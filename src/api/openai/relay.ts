// Relays an engine's SSE stream to the client as the engine's own bytes, chunk by chunk as
// each event completes (no buffering beyond the event in flight), watching them on the way
// for TTFT and usage. Any way the stream can fail mid-way (an in-band error event, a broken
// connection, an end without [DONE]) becomes one final gateway error event, then the stream
// closes.
//
// Cost: after the first chunk the engine's body is read in one loop that writes each chunk,
// as watched, into an IdentityTransformStream the runtime sends on (relay-loop.ts), where the
// leg can hand its stream over (LegStream.detach); a leg that cannot is made into a stream
// first (`pulledLeg`), so one loop serves both. A chunk is never decoded unless a byte scan
// (sse.ts `scanEvents`) finds something in it that may be the [DONE] marker, an error or a
// usage report; only then are its events, from that one on, decoded and parsed. The token
// count without usage is approximate: `countOutputPieces` counts non-empty "text"/"content"
// members and "tool_calls" arrays in the bytes (one per streamed token for vLLM), where the
// parsed path counts choices with output.
//
// This is `sse_relay: "inspect"`. The default, "native", takes native-relay.ts instead: the
// bytes piped natively, watched behind the client, so an in-band error reaches the client as
// vLLM wrote it (a broken body or a missing [DONE] still gets the gateway's error event).
import type { DetachedLeg, LegStream } from "../../pd/leg.js";
import { NativeRelay } from "../native-relay.js";
import { sseErrorEvent } from "./errors.js";
import { RelayLoop } from "./relay-loop.js";
import { SseWatch } from "./sse-watch.js";
import type { RelayOptions } from "./sse-watch.js";

export type { RelayEnd, RelayOptions, RelayStats } from "./sse-watch.js";

/** The client's SSE body. Resolves once the leg's first frame (already read by the pipeline)
 *  is in hand. */
export async function sseRelay(engine: LegStream<Uint8Array>, o: RelayOptions & { native?: boolean }): Promise<ReadableStream<Uint8Array>> {
  const watch = new SseWatch(o);
  let first: IteratorResult<Uint8Array>;
  try {
    first = await engine.next();
  } catch (err) {
    return new RelayLoop(pulledLeg(engine, err), watch, o).start();
  }
  if (first.done) return new RelayLoop(pulledLeg(engine), watch, o).start();
  const detached = engine.detach?.();
  if (detached && o.native) return new NativeRelay(detached, watch, { ...o, errorEvent: sseErrorEvent }).start(first.value);
  return new RelayLoop(detached ?? pulledLeg(engine), watch, o).start(first.value);
}

/** A leg that cannot hand its stream over, as one: its frames pulled through next() (or the
 *  error its first frame already gave). */
function pulledLeg(engine: LegStream<Uint8Array>, failed?: unknown): DetachedLeg<Uint8Array> {
  return {
    body: new ReadableStream<Uint8Array>({
      start(c) {
        if (failed !== undefined) c.error(failed);
      },
      async pull(c) {
        const r = await engine.next();
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
      cancel: () => engine.cancel(),
    }),
    signal: new AbortController().signal, // the leg's own stop rules apply through next()
    end: (how) => {
      if (how !== "completed") engine.cancel();
    },
  };
}
