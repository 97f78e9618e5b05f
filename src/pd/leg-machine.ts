// The leg lifecycle as a pure transition function (ARCHITECTURE decision 5): state x event ->
// next state + the actions the driver (leg.ts) performs. The abort rules live here and only
// here: a client that leaves a prefill leg (or sends its Abort call then) stops it at once,
// and decode is never sent; before decode's first frame with a KV handoff given, the stop or
// the Abort RPC is deferred until that frame (capped); otherwise it is immediate; a leg that
// ends normally sends none. An Abort call only sends the engine its Abort RPC: the stream
// goes on to the end the engine gives it. A consumer that pipes the rest to the client natively
// and reads a copy behind it (watch_behind) may have passed the engine's end on before it read
// it, and a client closes on an end: a client that leaves then is checked against the copy
// first, and gets no Abort when the engine had ended. Table-tested in
// test/unit/pd/leg-machine.test.ts.

export type LegPhase = "opening" | "awaiting_first_frame" | "streaming" | "detached" | "ended";

export interface LegState {
  phase: LegPhase;
  /** Ended by a stop (client gone, timeout, consumer cancel): next() then fails, not ends. */
  stopped: boolean;
  /** The engine's Abort RPC went out (at most once per leg). */
  abortSent: boolean;
  /** The consumer reads a copy behind what the client got (watch_behind). */
  behind?: boolean;
}

export type LegEvent =
  /** The call was started. */
  | "dispatched"
  /** The first frame came (the handoff, if any, is consumed); `last_frame`: it was also the end. */
  | "first_frame"
  | "last_frame"
  /** The call failed (or was refused) before its first frame. */
  | "first_frame_failed"
  /** No first frame within the leg's timeout (a prefill leg: no end within it). */
  | "timeout"
  /** The client went away. */
  | "client_gone"
  /** The client's own Abort call named the request. */
  | "abort_requested"
  /** A deferral ended (first frame settled, or deferred_abort_max_ms passed). */
  | "deferred_stop_due"
  | "deferred_abort_due"
  /** The consumer stopped reading before the end (end("cancelled") too). */
  | "cancel"
  /** The frames left were handed to the consumer as a stream (detach, detachRaw). */
  | "detach"
  /** The consumer pipes them to the client natively and reads a copy behind the client. */
  | "watch_behind"
  /** After check_behind: the copy saw the engine's end, or it did not in time. */
  | "behind_end_seen"
  | "behind_stop_due"
  /** Read to its end; `stream_failed`: broke off after it started (or a drained leg failed). */
  | "stream_end"
  | "stream_failed";

export type LegAction =
  | "charge_load"
  /** Listen for the client leaving and its Abort call; start the leg's timer. */
  | "watch"
  | "report_ok"
  /** Give the load back, stop listening, stop the timer. */
  | "release"
  /** Tell the surface the stream it was handed ended. */
  | "stream_ended"
  /** Fire the stop signal a consumer piping the body watches. */
  | "signal_stop"
  | "close_call"
  | "send_abort"
  /** Wait for the first frame (or the cap), then feed deferred_*_due. */
  | "defer_stop"
  | "defer_abort"
  /** Let the copy behind the client catch up, then feed behind_end_seen or behind_stop_due. */
  | "check_behind";

export interface LegRules {
  /** The engine holds a KV handoff it has not consumed before its first frame. */
  handedOff: boolean;
  /** A prefill leg, drained to its end: an Abort call stops it like a client that left. */
  drain: boolean;
}

export interface LegStep {
  state: LegState;
  actions: LegAction[];
}

export const INITIAL_LEG: LegState = { phase: "opening", stopped: false, abortSent: false };

const live = (p: LegPhase) => p !== "opening" && p !== "ended";
const handedOver = (p: LegPhase) => p === "streaming" || p === "detached";

/** One transition. Events that do not apply in a phase change nothing. */
export function stepLeg(s: LegState, event: LegEvent, rules: LegRules): LegStep {
  switch (event) {
    case "dispatched":
      return s.phase === "opening" ? { state: { ...s, phase: "awaiting_first_frame" }, actions: ["charge_load", "watch"] } : same(s);
    case "first_frame":
    case "last_frame":
      return s.phase === "awaiting_first_frame" ? firstFrame(s, event === "last_frame", rules) : same(s);
    case "client_gone":
      if (s.behind && s.phase === "detached") return { state: s, actions: ["check_behind"] };
      return live(s.phase) ? byHandoffRule(s, rules, "stop") : same(s);
    case "watch_behind":
      return s.phase === "detached" ? { state: { ...s, behind: true }, actions: [] } : same(s);
    case "behind_end_seen":
      return live(s.phase) ? stop(s, false) : same(s);
    case "behind_stop_due":
      return live(s.phase) ? stop(s) : same(s);
    case "abort_requested":
      return live(s.phase) ? byHandoffRule(s, rules, rules.drain ? "stop" : "abort") : same(s);
    case "deferred_abort_due":
      return live(s.phase) ? abortRpc(s) : same(s);
    case "timeout":
    case "cancel":
      return live(s.phase) ? stop(s) : same(s);
    case "deferred_stop_due":
      return s.stopped ? same(s) : stop(s);
    case "detach":
      return s.phase === "streaming" ? { state: { ...s, phase: "detached" }, actions: [] } : same(s);
    case "first_frame_failed":
    case "stream_end":
    case "stream_failed":
      return live(s.phase) ? end(s, event !== "stream_end") : same(s);
  }
}

function same(s: LegState): LegStep {
  return { state: s, actions: [] };
}

function firstFrame(s: LegState, last: boolean, rules: LegRules): LegStep {
  // A drained leg reports its outcome at its end, not at its first frame.
  const report: LegAction[] = rules.drain ? [] : ["report_ok"];
  if (!last) return { state: { ...s, phase: "streaming" }, actions: report };
  return { state: { ...s, phase: "ended" }, actions: [...report, "release", "stream_ended"] };
}

/** While the engine may still be pulling a handoff, a stop or Abort waits for its first frame. */
function byHandoffRule(s: LegState, rules: LegRules, what: "stop" | "abort"): LegStep {
  if (s.phase === "awaiting_first_frame" && rules.handedOff) return { state: s, actions: [what === "stop" ? "defer_stop" : "defer_abort"] };
  return what === "stop" ? stop(s) : abortRpc(s);
}

function abortRpc(s: LegState): LegStep {
  return s.abortSent ? same(s) : { state: { ...s, abortSent: true }, actions: ["send_abort"] };
}

/** Stops the leg now: its consumer's signal, its load, the call, the engine's Abort RPC
 *  (`abort` false: the engine had ended the stream, its end only not read yet). */
function stop(s: LegState, abort = true): LegStep {
  const actions: LegAction[] = ["signal_stop"];
  if (live(s.phase)) actions.push("release");
  if (handedOver(s.phase)) actions.push("stream_ended");
  actions.push("close_call");
  const sending = abort && !s.abortSent;
  if (sending) actions.push("send_abort");
  return { state: { phase: "ended", stopped: true, abortSent: s.abortSent || sending }, actions };
}

/** Ends the leg without a stop: read to its end, or failed (the call is closed then). */
function end(s: LegState, failed: boolean): LegStep {
  const actions: LegAction[] = ["release"];
  if (handedOver(s.phase)) actions.push("stream_ended");
  if (failed) actions.push("close_call");
  return { state: { ...s, phase: "ended" }, actions };
}
