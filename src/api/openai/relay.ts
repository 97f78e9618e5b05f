// Relays an engine's SSE stream to the client as the engine's own bytes, chunk by chunk as
// each event completes (no buffering beyond the event in flight), watching them on the way
// for TTFT and usage. Any way the stream can fail mid-way (an in-band error event, a broken
// connection, an end without [DONE]) becomes one final gateway error event, then the stream
// closes.
//
// Cost: after the first chunk the engine's body is read in one loop that writes each chunk,
// as watched, into an IdentityTransformStream the runtime sends on (one await for the read,
// one for the write), where the leg can hand its stream over (LegStream.detach); a leg that
// cannot is made into a stream first (`pulledLeg`), so one loop serves both. A chunk is never decoded
// unless a byte scan (sse.ts `scanEvents`) finds something in it that may be the [DONE]
// marker, an error or a usage report; only then are its events decoded and parsed. The token
// count without usage is approximate: `countOutputPieces` counts non-empty "text"/"content"
// members and "tool_calls" arrays in the bytes (one per streamed token for vLLM), where the
// parsed path counts choices with output.
import { errorText, GatewayError } from "../../core/errors.js";
import type { DetachedLeg, LegStream } from "../../pd/leg.js";
import { sseErrorEvent } from "./errors.js";
import { SseWatch } from "./sse-watch.js";
import type { RelayEnd, RelayOptions, WatchResult } from "./sse-watch.js";

export type { RelayEnd, RelayOptions, RelayStats } from "./sse-watch.js";

const encoder = new TextEncoder();

/** The client's SSE body. Resolves once the leg's first frame (already read by the pipeline)
 *  is in hand. */
export async function sseRelay(engine: LegStream<Uint8Array>, o: RelayOptions & { native?: boolean }): Promise<ReadableStream<Uint8Array>> {
  const watch = new SseWatch(o);
  let first: IteratorResult<Uint8Array>;
  try {
    first = await engine.next();
  } catch (err) {
    return piped(pulledLeg(engine, err), watch, o);
  }
  if (first.done) return piped(pulledLeg(engine), watch, o);
  const detached = engine.detach?.();
  if (detached && o.native) return native(detached, watch, o, first.value);
  return piped(detached ?? pulledLeg(engine), watch, o, first.value);
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

/** The engine's body handed to the runtime as it is (models with `sse_relay: "native"`): no
 *  JS step per chunk, so pass-through cost. Seen: the first chunk (TTFT) and how the body
 *  ended. Not seen: tokens, usage, [DONE], in-band errors (the client gets vLLM's own error
 *  event); a body that breaks off reaches the client as a broken body. */
function native(leg: DetachedLeg<Uint8Array>, watch: SseWatch, o: RelayOptions, first: Uint8Array): ReadableStream<Uint8Array> {
  watch.sawFirstChunk();
  const pipe = identityPipe();
  const writer = pipe.writable.getWriter();
  const ended = (how: "completed" | "failed" | "cancelled") => {
    leg.end(how);
    if (how === "completed") watch.end({ outcome: "completed", status: 200 });
    else if (how === "cancelled") watch.end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    else watch.end({ outcome: "failed", status: 502, errorCode: `${o.leg}_stream_error` });
  };
  const piping = writer
    .write(first)
    .then(() => {
      writer.releaseLock();
      return leg.body.pipeTo(pipe.writable, { signal: leg.signal });
    })
    .then(
      () => ended("completed"),
      // Which side broke is not said: the client's going shows on its signal (or the leg's)
      // a moment after the runtime cancels the body; else the engine's body broke off.
      () => new Promise<void>((r) => setTimeout(r, 0)).then(() => ended(o.clientSignal.aborted || leg.signal.aborted ? "cancelled" : "failed")),
    );
  o.waitUntil?.(piping);
  return pipe.readable as ReadableStream<Uint8Array>;
}

/** The engine's body read in a loop and written, as watched, into an identity stream the
 *  runtime sends on: after `first` (the frame the pipeline read) when there is one. Measured in
 *  workerd, a reader loop into an IdentityTransformStream costs about 1.9x a native pipe per
 *  chunk where a JS TransformStream pipe costs about 2.6x (docs/benchmarks.md). */
function piped(leg: DetachedLeg<Uint8Array>, watch: SseWatch, o: RelayOptions, first?: Uint8Array): ReadableStream<Uint8Array> {
  const pipe = identityPipe();
  const writer = pipe.writable.getWriter();
  const reader = leg.body.getReader();
  let over = false;
  const finish = (how: "completed" | "failed" | "cancelled", end: Omit<RelayEnd, "stats">) => {
    if (over) return;
    over = true;
    if (how !== "completed") reader.cancel().catch(() => undefined);
    leg.end(how);
    watch.end(end);
  };
  const cancelled = () => {
    writer.close().catch(() => undefined); // a reader still there (the runtime's) sees the body end
    finish("cancelled", { outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
  };
  const fail = async (err: GatewayError, before = "") => {
    finish("failed", { outcome: "failed", status: err.status, errorCode: err.code });
    await writer.write(encoder.encode(before + sseErrorEvent(err)));
    await writer.close();
  };
  // The leg is stopped (the client left): the pending read ends, and the loop sees the signal.
  const signal = leg.signal;
  const stop = (): void => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  /** False when the watch found the stream's end (an in-band error, now written). No async
   *  step of its own: one await per chunk (the write) besides the read. */
  const send = (r: WatchResult): Promise<void> | false => {
    if (r.error) {
      fail(r.error.error, r.error.before).catch(() => undefined); // the client may be gone
      return false;
    }
    return r.out ? writer.write(r.out) : Promise.resolve();
  };
  const run = async (): Promise<void> => {
    const head = first && send(watch.chunk(first));
    if (head === false) return;
    await head;
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (err) {
        if (o.clientSignal.aborted || signal.aborted) return cancelled();
        return fail(err instanceof GatewayError ? err : watch.brokenStream(errorText(err)));
      }
      if (over) return;
      if (signal.aborted || o.clientSignal.aborted) return cancelled();
      if (r.done) break;
      const sent = send(watch.chunk(r.value));
      if (sent === false) return;
      await sent;
    }
    const last = send(watch.close());
    if (last === false) return;
    await last;
    finish("completed", { outcome: "completed", status: 200 });
    await writer.close();
  };
  // The client's side gone (the runtime cancelled the body) shows as a failing write in the
  // loop, or here; between writes the client's signal (checked after every read) tells first.
  writer.closed.catch(() => (over ? undefined : cancelled()));
  const relaying = run()
    .catch(() => (over ? undefined : cancelled()))
    .finally(() => signal.removeEventListener("abort", stop));
  o.waitUntil?.(relaying);
  return pipe.readable as ReadableStream<Uint8Array>;
}

/** workerd's byte pipe where there is one (no JS step on the reading side), else a plain
 *  TransformStream (Node, for unit tests). */
function identityPipe(): { readable: ReadableStream; writable: WritableStream<Uint8Array> } {
  return typeof IdentityTransformStream === "function" ? new IdentityTransformStream() : new TransformStream<Uint8Array, Uint8Array>();
}
