// One leg lifecycle for every transport (ARCHITECTURE decision 5): dispatch, load charge,
// per-leg timeout, the engine outcome, and what a client disconnect or the client's Abort
// call does. A prefill leg is drained to its end; a decode (or regular) leg is opened up to
// its first frame, which proves any KV handoff completed, and then handed to the surface.
// When the engine gets its Abort is the state machine's to say (leg-machine.ts, pure and
// table-tested); leg-driver.ts performs its actions; this file feeds it the call's events.
import { clientCancelledError, GatewayError, requestAbortedError } from "../core/errors.js";
import { LegFailure, type EngineCall, type LegSpec, type LegTransport, type RawBody } from "../core/leg-transport.js";
import type { EngineTarget, Leg } from "../core/types.js";
import type { LegContext } from "./leg-context.js";
import { LegDriver } from "./leg-driver.js";
import { legError } from "./leg-errors.js";

export type { LegContext, OutcomeReporter } from "./leg-context.js";

/** The error a leg that the client ended ends with, if the client ended it. */
export function endedByClient(ctx: Pick<LegContext, "clientSignal" | "abortRequested">): GatewayError | undefined {
  if (ctx.clientSignal.aborted) return clientCancelledError();
  return ctx.abortRequested?.aborted ? requestAbortedError() : undefined;
}

function asFailure(err: unknown): LegFailure {
  if (err instanceof LegFailure) return err;
  return new LegFailure("transport", 502, err instanceof Error ? err.message : String(err));
}

/** Runs the prefill leg to its end and returns the handoff it produced. A client disconnect or
 *  Abort call aborts it at once and decode is never sent; so does the prefill timeout (504). */
export async function drainPrefill<P, F>(
  t: LegTransport<P, F>,
  engine: EngineTarget,
  payload: P,
  spec: LegSpec,
  ctx: LegContext,
  timeoutMs: number,
): Promise<string | undefined> {
  const call = t.start(engine, payload, spec);
  const rules = { handedOff: false, drain: true };
  const run = new LegDriver({ transport: t, engine, leg: "prefill", requestId: spec.requestId, call, ctx, rules, timeoutMs, deferredAbortMaxMs: 0 });
  run.dispatch("dispatched");
  const harvester = t.harvester();
  let frames = 0;
  try {
    for (let r = await call.next(); !r.done; r = await call.next()) {
      frames++;
      harvester.push(r.value);
    }
  } catch (err) {
    run.dispatch("stream_failed");
    const ended = endedByClient(ctx);
    if (ended) throw ended;
    const f = asFailure(err);
    const e = run.timedOut ? legError("prefill", "timeout", engine.name, f, timeoutMs) : legError("prefill", frames === 0 ? "start" : "stream", engine.name, f);
    ctx.outcomes.report(engine, "prefill", run.timedOut ? 504 : f.status);
    logLegFailure(engine, "prefill", spec.requestId, e);
    throw e.from(engine.name);
  }
  run.dispatch("stream_end");
  ctx.outcomes.report(engine, "prefill", 200);
  return harvester.result();
}

export interface LegStream<F> {
  /** The engine's configured name, for messages about its stream. */
  readonly engine?: string;
  /** The leg's frames in order, the first one included. Mid-stream failures reject with a
   *  GatewayError (`<leg>_stream_error`). */
  next(): Promise<IteratorResult<F>>;
  /** The consumer stopped before the end (the client went away): abort the leg now. */
  cancel(): void;
  /** The engine's response headers, where the protocol has them. */
  headers(): Headers | undefined;
  /** After the first frame was read: the frames left as the transport's own stream, for a
   *  consumer that pipes them (no JS step per frame here). The consumer then calls `end`
   *  exactly once; next() and cancel() are not used again. Undefined when the transport
   *  cannot hand its stream over. */
  detach?(): DetachedLeg<F> | undefined;
  /** Before anything was read: the leg's raw body (its first frame's bytes first), where the
   *  transport can hand it over (EngineCall.detachRaw). Same contract as detach. */
  detachRaw?(): RawLeg | undefined;
}

/** A leg relayed as the engine's own bytes. */
export interface RawLeg extends DetachedLeg<Uint8Array>, Omit<RawBody, "body"> {
  /** Ends the leg as failed and gives the error the client gets, as next() would have. */
  failed(f: LegFailure): GatewayError;
}

export interface DetachedLeg<F> {
  body: ReadableStream<F>;
  /** Fires when the leg is stopped (the client left, a timeout), so its consumer (a pipe,
   *  a read loop) cancels the engine's body, which over HTTP is vLLM's abort. */
  signal: AbortSignal;
  /** completed: read to its end; failed: broke off (the call is closed); cancelled: the
   *  client left (the leg is aborted now). */
  end(how: "completed" | "failed" | "cancelled"): void;
  /** The consumer pipes the body to the client natively and reads a copy behind it: a client
   *  that leaves is checked first (`endSeen`, bounded by the consumer: did the copy see the
   *  engine's end?), and the engine gets no Abort when it had ended the stream. */
  watchBehind?(endSeen: () => Promise<boolean>): void;
}

export interface OpenLegOptions {
  /** The engine holds a KV handoff: a disconnect or Abort call before the first frame defers
   *  the engine's Abort until that frame, the stream's end or `deferredAbortMaxMs`. */
  handedOff: boolean;
  deferredAbortMaxMs: number;
  firstFrameTimeoutMs: number;
}

/** Dispatches a decode or regular leg and waits for its first frame. Abort rules, the same
 *  for a client that left and for its Abort call: with a handoff, before that frame the
 *  engine's Abort is deferred until it; otherwise, and after the first frame, it is
 *  immediate. A client that left has its call closed too; after an Abort call the stream goes
 *  on to the engine's own end. Normal completion sends none. (leg-machine.ts decides.) */
export async function openLeg<P, F>(
  t: LegTransport<P, F>,
  engine: EngineTarget,
  payload: P,
  spec: LegSpec,
  ctx: LegContext,
  o: OpenLegOptions,
): Promise<LegStream<F>> {
  const call = t.start(engine, payload, spec);
  const first = call.next();
  const run = new LegDriver({
    transport: t,
    engine,
    leg: spec.leg,
    requestId: spec.requestId,
    call,
    ctx,
    rules: { handedOff: o.handedOff, drain: false },
    timeoutMs: o.firstFrameTimeoutMs,
    deferredAbortMaxMs: o.deferredAbortMaxMs,
    firstFrame: first,
  });
  run.dispatch("dispatched");
  const head = await firstFrame(run, first, engine, spec, ctx, o.firstFrameTimeoutMs);
  return legStream(run, call, head, engine, spec.leg, spec.requestId);
}

/** Waits for the leg's first frame; the client need not wait for it once it left (the
 *  machine's abort rule decides what happens to the leg then). */
async function firstFrame<F>(
  run: LegDriver<F>,
  first: Promise<IteratorResult<F>>,
  engine: EngineTarget,
  spec: LegSpec,
  ctx: LegContext,
  timeoutMs: number,
): Promise<IteratorResult<F>> {
  let head: IteratorResult<F> | "gone";
  try {
    head = await Promise.race([first, run.gone]);
  } catch (err) {
    run.dispatch("first_frame_failed");
    // A failure after an Abort call is still the engine's: decode failover may take it.
    if (ctx.clientSignal.aborted) throw clientCancelledError();
    throw openFailure(asFailure(err), run.timedOut, engine, spec, ctx, timeoutMs);
  } finally {
    run.clearTimer();
  }
  if (head === "gone" || ctx.clientSignal.aborted) {
    first.catch(() => undefined); // settles after the (deferred) abort; nobody reads it
    throw clientCancelledError();
  }
  run.dispatch(head.done ? "last_frame" : "first_frame");
  return head;
}

/** A failure before the first frame, reported, logged, as the client gets it. */
function openFailure(f: LegFailure, timedOut: boolean, engine: EngineTarget, spec: LegSpec, ctx: LegContext, timeoutMs: number): GatewayError {
  const e = timedOut ? legError(spec.leg, "timeout", engine.name, f, timeoutMs) : legError(spec.leg, "start", engine.name, f);
  ctx.outcomes.report(engine, spec.leg, timedOut ? 504 : f.status);
  logLegFailure(engine, spec.leg, spec.requestId, e);
  // The transport's account of a failure before the first frame, for failover decisions.
  if (!timedOut) e.cause = f;
  return e.from(engine.name);
}

/** The opened leg as the surface reads it: frames one at a time, or handed over whole. */
function legStream<F>(run: LegDriver<F>, call: EngineCall<F>, head: IteratorResult<F>, engine: EngineTarget, leg: Leg, requestId: string): LegStream<F> {
  let pending: IteratorResult<F> | undefined = head;
  const streamError = (f: LegFailure) => legStreamError(f, engine, leg, requestId);
  const handOver = <B>(body: ReadableStream<B>) => handedOver(run, body);
  return {
    engine: engine.name,
    headers: () => call.headers(),
    async next() {
      if (pending) {
        const r = pending;
        pending = undefined;
        return r;
      }
      return nextFrame(run, call, streamError);
    },
    cancel: () => run.dispatch("cancel"),
    detach() {
      if (pending || run.stopped || run.phase !== "streaming") return undefined;
      const body = call.detach?.();
      return body ? handOver(body) : undefined;
    },
    detachRaw() {
      if (!pending || pending.done || run.stopped || run.phase !== "streaming") return undefined;
      const raw = call.detachRaw?.();
      if (!raw) return undefined;
      pending = undefined;
      const detached = handOver(raw.body);
      const { head, endFlag, endFailure, failure } = raw;
      function failed(f: LegFailure): GatewayError {
        detached.end("failed");
        return streamError(f);
      }
      return Object.assign(detached, { head, endFlag, endFailure, failure, failed });
    },
  };
}

/** The next frame after the first one. */
async function nextFrame<F>(run: LegDriver<F>, call: EngineCall<F>, streamError: (f: LegFailure) => GatewayError): Promise<IteratorResult<F>> {
  // Stopped (the client left, or the consumer cancelled): not a normal end.
  if (run.stopped) throw clientCancelledError();
  if (run.phase === "ended") return { done: true, value: undefined };
  try {
    const r = await call.next();
    if (r.done) run.dispatch("stream_end");
    return r;
  } catch (err) {
    run.dispatch("stream_failed");
    if (run.clientGone) throw clientCancelledError();
    throw streamError(asFailure(err));
  }
}

/** A failure after the first frame, logged, as the client gets it. */
function legStreamError(f: LegFailure, engine: EngineTarget, leg: Leg, requestId: string): GatewayError {
  const e = legError(leg, "stream", engine.name, f);
  logLegFailure(engine, leg, requestId, e);
  return e.from(engine.name);
}

/** The leg's frames left, handed to a consumer that pipes them. */
function handedOver<F, B>(run: LegDriver<F>, body: ReadableStream<B>): DetachedLeg<B> {
  run.dispatch("detach");
  return {
    body,
    // Made when a consumer pipes (a non-streamed answer handed to the runtime never asks).
    get signal() {
      return run.stopSignal();
    },
    end(how) {
      run.dispatch(how === "cancelled" ? "cancel" : how === "failed" ? "stream_failed" : "stream_end");
    },
    watchBehind: (endSeen) => run.watchBehind(endSeen),
  };
}

/** The log names the engine's URL too; the client's message names only the engine. */
function logLegFailure(engine: EngineTarget, leg: Leg, requestId: string, e: GatewayError): void {
  console.warn(JSON.stringify({ msg: "engine leg failed", leg, engine: engine.name, url: engine.url, requestId, code: e.code, status: e.status, error: e.message }));
}
