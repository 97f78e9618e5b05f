// Runs one leg's state machine (leg-machine.ts): feeds it the leg's events and performs the
// actions it returns on the call, the load accounting, the timer and the client's signals.
// Decisions live in the machine; this file only does what it is told.
import { clientCancelledError } from "../core/errors.js";
import type { EngineCall, LegTransport } from "../core/leg-transport.js";
import { delay } from "../core/time.js";
import type { EngineTarget, Leg } from "../core/types.js";
import { INITIAL_LEG, stepLeg, type LegAction, type LegEvent, type LegRules, type LegState } from "./leg-machine.js";
import type { LegContext } from "./leg-context.js";

export interface LegDriverInput<F> {
  /** The transport, for its Abort RPC. */
  transport: Pick<LegTransport<unknown, unknown>, "abort">;
  engine: EngineTarget;
  leg: Leg;
  requestId: string;
  call: EngineCall<F>;
  ctx: LegContext;
  rules: LegRules;
  timeoutMs: number;
  deferredAbortMaxMs: number;
  /** Settles when the first frame came (or the call failed first): what a deferral waits for. */
  firstFrame?: Promise<unknown>;
}

export class LegDriver<F> {
  private state: LegState = INITIAL_LEG;
  private releaseLoad: (() => void) | undefined;
  private readonly unlisten: (() => void)[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pipeStop: AbortController | undefined;
  /** The leg's timer fired (its error is the timeout's). */
  timedOut = false;
  private markGone: () => void = () => undefined;
  /** The consumer's check of its copy behind the client (watchBehind). */
  private endSeenBehind: (() => Promise<boolean>) | undefined;
  /** Resolves when the client goes away: whoever waits on the engine stops waiting. */
  readonly gone = new Promise<"gone">((resolve) => (this.markGone = () => resolve("gone")));

  constructor(private readonly i: LegDriverInput<F>) {}

  get phase(): LegState["phase"] {
    return this.state.phase;
  }

  get stopped(): boolean {
    return this.state.stopped;
  }

  /** The client went away (the leg ends as cancelled, whatever else failed). */
  get clientGone(): boolean {
    return this.i.ctx.clientSignal.aborted;
  }

  dispatch(event: LegEvent): void {
    const { state, actions } = stepLeg(this.state, event, this.i.rules);
    // The state first: an action may call back in (a pipe that sees the stop signal ends the leg).
    this.state = state;
    for (const a of actions) this.perform(a);
  }

  /** Fires when the leg is stopped, for a consumer that pipes its body. */
  stopSignal(): AbortSignal {
    this.pipeStop ??= new AbortController();
    if (this.state.stopped) this.pipeStop.abort(clientCancelledError());
    return this.pipeStop.signal;
  }

  private perform(a: LegAction): void {
    const { call, ctx, engine } = this.i;
    switch (a) {
      case "charge_load":
        this.releaseLoad = ctx.loads.charge(engine.name);
        return;
      case "watch":
        return this.watch();
      case "report_ok":
        return ctx.outcomes.report(engine, this.i.leg, 200);
      case "release":
        return this.release();
      case "stream_ended":
        return ctx.onStreamEnd?.();
      case "signal_stop":
        return this.pipeStop?.abort(clientCancelledError());
      case "close_call":
        return call.close();
      case "send_abort":
        return this.sendAbort();
      case "defer_stop":
        return this.defer("deferred_stop_due");
      case "defer_abort":
        return this.defer("deferred_abort_due");
      case "check_behind":
        return this.checkBehind();
    }
  }

  /** The consumer pipes the rest natively and reads a copy behind the client; `endSeen`
   *  (bounded by the consumer: it lets the copy catch up for a moment) says whether the copy
   *  saw the engine's end. */
  watchBehind(endSeen: () => Promise<boolean>): void {
    this.endSeenBehind = endSeen;
    this.dispatch("watch_behind");
  }

  private checkBehind(): void {
    const seen = this.endSeenBehind?.() ?? Promise.resolve(false);
    this.i.ctx.waitUntil(seen.then((yes) => this.dispatch(yes ? "behind_end_seen" : "behind_stop_due"), () => this.dispatch("behind_stop_due")));
  }

  private watch(): void {
    const { ctx } = this.i;
    this.unlisten.push(
      onAbort(ctx.clientSignal, () => {
        this.markGone();
        this.dispatch("client_gone");
      }),
      onAbort(ctx.abortRequested, () => this.dispatch("abort_requested")),
    );
    // A signal that had fired already may have ended the leg while it was being watched.
    if (this.state.phase === "ended") return this.release();
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.dispatch("timeout");
    }, this.i.timeoutMs);
  }

  /** Stops the leg's timer (its first frame came, or it ended). */
  clearTimer(): void {
    clearTimeout(this.timer);
  }

  private release(): void {
    this.clearTimer();
    this.releaseLoad?.();
    this.releaseLoad = undefined;
    for (const u of this.unlisten.splice(0)) u();
  }

  /** The engine's Abort RPC (where the protocol has one), off the response path. Failures are
   *  logged, never thrown: the request is over for the client. */
  private sendAbort(): void {
    const { transport, engine, requestId, ctx } = this.i;
    if (!transport.abort) return;
    const rpc = transport.abort(engine, requestId).catch((err: unknown) => {
      console.warn(JSON.stringify({ msg: "abort rpc failed", engine: engine.name, requestId, error: String(err) }));
    });
    ctx.waitUntil(rpc);
  }

  /** Gone (or aborted) in the window after prefill finished: decode still goes out with the
   *  handoff, and the deferred abort lets it consume the blocks instead of pinning them until
   *  the lease. */
  private defer(due: "deferred_stop_due" | "deferred_abort_due"): void {
    const settled = (this.i.firstFrame ?? Promise.resolve()).then(
      () => undefined,
      () => undefined,
    );
    this.i.ctx.waitUntil(Promise.race([settled, delay(this.i.deferredAbortMaxMs)]).then(() => this.dispatch(due)));
  }
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
