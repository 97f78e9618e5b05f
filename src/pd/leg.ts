// One leg lifecycle for every transport (ARCHITECTURE decision 5): dispatch, load charge,
// per-leg timeout, the engine outcome, and what a client disconnect or the client's Abort
// call does. A prefill leg is drained to its end; a decode (or regular) leg is opened up to
// its first frame, which proves any KV handoff completed, and then handed to the surface.
import { clientCancelledError, GatewayError, requestAbortedError } from "../core/errors.js";
import type { EngineLoads } from "../core/in-flight.js";
import { LegFailure, type EngineCall, type LegSpec, type LegTransport, type RawBody } from "../core/leg-transport.js";
import { delay } from "../core/time.js";
import type { EngineTarget, Leg } from "../core/types.js";
import { legError } from "./leg-errors.js";

/** Where engine outcomes go (breakers, registry, metrics): routing supplies it. */
export interface OutcomeReporter {
  /** `status` is the engine's own answer as HTTP (200 on success), before any mapping. */
  report(engine: EngineTarget, leg: Leg, status: number): void;
}

export interface LegContext {
  model: string;
  /** Told once when a stream handed to the surface ends, however it ends (drained, failed,
   *  cancelled): no extra wrapper around every frame for it. */
  onStreamEnd?(): void;
  /** Fires when the client goes away. */
  clientSignal: AbortSignal;
  /** Fires when the client's Abort call names the request (routing/client-requests.ts): the
   *  engine gets its Abort by the same rule as for a client that went away, and the stream
   *  goes on to the end the engine gives it (finish_reason "abort"). */
  abortRequested?: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  loads: EngineLoads;
  outcomes: OutcomeReporter;
}

/** Sends the engine the leg's Abort RPC (where the protocol has one) once, off the response
 *  path. Failures are logged, never thrown: the request is over for the client. */
function abortRpc<P, F>(t: LegTransport<P, F>, engine: EngineTarget, requestId: string, ctx: LegContext): () => void {
  let sent = false;
  return () => {
    if (sent || !t.abort) return;
    sent = true;
    const rpc = t.abort(engine, requestId).catch((err: unknown) => {
      console.warn(JSON.stringify({ msg: "abort rpc failed", engine: engine.name, requestId, error: String(err) }));
    });
    ctx.waitUntil(rpc);
  };
}

/** Stops a call now: closes it and sends its Abort RPC. */
function stopper<F>(call: EngineCall<F>, abort: () => void): () => void {
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    call.close();
    abort();
  };
}

/** Runs `listener` when `signal` fires (at once if it has); returns the unsubscribe. */
function onAbort(signal: AbortSignal | undefined, listener: () => void): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    listener();
    return () => undefined;
  }
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

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
  const release = ctx.loads.charge(engine.name);
  const stop = stopper(call, abortRpc(t, engine, spec.requestId, ctx));
  const unlisten = [onAbort(ctx.clientSignal, stop), onAbort(ctx.abortRequested, stop)];
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, timeoutMs);
  const harvester = t.harvester();
  let frames = 0;
  try {
    for (;;) {
      const r = await call.next();
      if (r.done) break;
      frames++;
      harvester.push(r.value);
    }
  } catch (err) {
    call.close();
    const ended = endedByClient(ctx);
    if (ended) throw ended;
    const f = asFailure(err);
    const e = timedOut ? legError("prefill", "timeout", engine.name, f, timeoutMs) : legError("prefill", frames === 0 ? "start" : "stream", engine.name, f);
    ctx.outcomes.report(engine, "prefill", timedOut ? 504 : f.status);
    logLegFailure(engine, "prefill", spec.requestId, e);
    throw e.from(engine.name);
  } finally {
    clearTimeout(timer);
    release();
    for (const u of unlisten) u();
  }
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
 *  on to the engine's own end. Normal completion sends none. */
export async function openLeg<P, F>(
  t: LegTransport<P, F>,
  engine: EngineTarget,
  payload: P,
  spec: LegSpec,
  ctx: LegContext,
  o: OpenLegOptions,
): Promise<LegStream<F>> {
  const { leg } = spec;
  const call = t.start(engine, payload, spec);
  const release = ctx.loads.charge(engine.name);
  const sendAbort = abortRpc(t, engine, spec.requestId, ctx);
  const abortCall = stopper(call, sendAbort);
  let state: "waiting" | "streaming" | "done" = "waiting";
  const unlisten: (() => void)[] = [];
  const finish = () => {
    if (state === "done") return;
    const handedOver = state === "streaming";
    state = "done";
    release();
    for (const u of unlisten) u();
    if (handedOver) ctx.onStreamEnd?.();
  };
  let stopped = false;
  let pipeStop: AbortController | undefined;
  const stopNow = () => {
    stopped = true;
    pipeStop?.abort(clientCancelledError());
    finish();
    abortCall();
  };
  const first = call.next();
  let markGone: () => void = () => undefined;
  const gone = new Promise<"gone">((resolve) => (markGone = () => resolve("gone")));
  /** Now, or, while the engine may still be pulling a handoff, once its first frame came. */
  function byHandoffRule(abort: () => void): void {
    if (state === "waiting" && o.handedOff) {
      const settled = first.then(() => undefined, () => undefined);
      ctx.waitUntil(Promise.race([settled, delay(o.deferredAbortMaxMs)]).then(abort));
    } else {
      abort();
    }
  }
  // Gone (or aborted) in the window after prefill finished: decode still goes out with the
  // handoff, and the deferred abort lets it consume the blocks instead of pinning them until
  // the lease.
  unlisten.push(
    onAbort(ctx.clientSignal, () => {
      markGone();
      if (state !== "done") byHandoffRule(stopNow);
    }),
    // An Abort call: the client still reads the stream, which the engine ends. A transport
    // without an Abort RPC (OpenAI HTTP) is aborted only by its client closing.
    onAbort(ctx.abortRequested, () => {
      if (state !== "done") byHandoffRule(() => state !== "done" && sendAbort());
    }),
  );

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stopNow();
  }, o.firstFrameTimeoutMs);
  let head: IteratorResult<F> | "gone";
  try {
    // The client need not wait for the first frame once it left; the abort rule above
    // decides what happens to the leg.
    head = await Promise.race([first, gone]);
  } catch (err) {
    finish();
    call.close();
    // A failure after an Abort call is still the engine's: decode failover may take it.
    if (ctx.clientSignal.aborted) throw clientCancelledError();
    const f = asFailure(err);
    const e = timedOut ? legError(leg, "timeout", engine.name, f, o.firstFrameTimeoutMs) : legError(leg, "start", engine.name, f);
    ctx.outcomes.report(engine, leg, timedOut ? 504 : f.status);
    logLegFailure(engine, leg, spec.requestId, e);
    // The transport's account of a failure before the first frame, for failover decisions.
    if (!timedOut) e.cause = f;
    throw e.from(engine.name);
  } finally {
    clearTimeout(timer);
  }
  if (head === "gone" || ctx.clientSignal.aborted) {
    first.catch(() => undefined); // settles after the (deferred) abort; nobody reads it
    throw clientCancelledError();
  }
  state = "streaming";
  ctx.outcomes.report(engine, leg, 200);
  if (head.done) finish();

  let pending: IteratorResult<F> | undefined = head;
  return {
    engine: engine.name,
    headers: () => call.headers(),
    async next() {
      if (pending) {
        const r = pending;
        pending = undefined;
        return r;
      }
      // Stopped (the client left, or the consumer cancelled): not a normal end.
      if (stopped) throw clientCancelledError();
      if (state === "done") return { done: true, value: undefined };
      try {
        const r = await call.next();
        if (r.done) finish();
        return r;
      } catch (err) {
        finish();
        call.close();
        if (ctx.clientSignal.aborted) throw clientCancelledError();
        throw streamError(asFailure(err));
      }
    },
    cancel() {
      if (state !== "done") stopNow();
    },
    detach() {
      if (pending || stopped || state !== "streaming") return undefined;
      const body = call.detach?.();
      return body ? handOver(body) : undefined;
    },
    detachRaw() {
      if (!pending || pending.done || stopped || state !== "streaming") return undefined;
      const raw = call.detachRaw?.();
      if (!raw) return undefined;
      pending = undefined;
      const leg = handOver(raw.body);
      const { head, endFlag, endFailure, failure } = raw;
      return Object.assign(leg, {
        head,
        endFlag,
        endFailure,
        failure,
        failed(f: LegFailure) {
          leg.end("failed");
          return streamError(f);
        },
      });
    },
  };

  /** A failure after the first frame, logged, as the client gets it. */
  function streamError(f: LegFailure): GatewayError {
    const e = legError(leg, "stream", engine.name, f);
    logLegFailure(engine, leg, spec.requestId, e);
    return e.from(engine.name);
  }

  function handOver<B>(body: ReadableStream<B>): DetachedLeg<B> {
    return {
      body,
      // Made when a consumer pipes (a non-streamed answer handed to the runtime never asks).
      get signal() {
        pipeStop ??= new AbortController();
        if (stopped) pipeStop.abort(clientCancelledError());
        return pipeStop.signal;
      },
      end(how) {
        if (how === "cancelled") stopNow();
        else {
          if (how === "failed") call.close();
          finish();
        }
      },
    };
  }
}

/** The log names the engine's URL too; the client's message names only the engine. */
function logLegFailure(engine: EngineTarget, leg: Leg, requestId: string, e: GatewayError): void {
  console.warn(JSON.stringify({ msg: "engine leg failed", leg, engine: engine.name, url: engine.url, requestId, code: e.code, status: e.status, error: e.message }));
}
