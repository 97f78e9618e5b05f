// The leg lifecycle's transition function (pd/leg-machine.ts): state x event -> next state +
// actions, one row per rule, then whole lifecycles through it. The integration tests
// (pd-grpc-abort, decode-failover, e2e abort-call) drive the same rules through workerd.
import { describe, expect, it } from "vitest";
import { INITIAL_LEG, stepLeg, type LegEvent, type LegPhase, type LegRules, type LegState } from "../../../src/pd/leg-machine.js";

const DECODE: LegRules = { handedOff: false, drain: false };
const HANDOFF: LegRules = { handedOff: true, drain: false };
const PREFILL: LegRules = { handedOff: false, drain: true };

const at = (phase: LegPhase, more: Partial<LegState> = {}): LegState => ({ phase, stopped: false, abortSent: false, ...more });
const STOPPED: LegState = { phase: "ended", stopped: true, abortSent: true };
const STOP = ["signal_stop", "release", "close_call", "send_abort"];
const STOP_HANDED_OVER = ["signal_stop", "release", "stream_ended", "close_call", "send_abort"];

type Row = [name: string, from: LegState, event: LegEvent, rules: LegRules, to: LegState, actions: string[]];

const TABLE: Row[] = [
  ["dispatch charges the load and watches the client", INITIAL_LEG, "dispatched", DECODE, at("awaiting_first_frame"), ["charge_load", "watch"]],
  ["first frame: streaming, outcome reported", at("awaiting_first_frame"), "first_frame", DECODE, at("streaming"), ["report_ok"]],
  ["a first frame that is the end ends the handed-over stream", at("awaiting_first_frame"), "last_frame", DECODE, at("ended"), ["report_ok", "release", "stream_ended"]],
  ["failed before the first frame: released, closed, no Abort", at("awaiting_first_frame"), "first_frame_failed", HANDOFF, at("ended"), ["release", "close_call"]],
  ["timeout before the first frame stops the leg", at("awaiting_first_frame"), "timeout", HANDOFF, STOPPED, STOP],

  // prefill: anything from the client stops it at once (decode is then never sent)
  ["prefill: client gone -> stopped now", at("awaiting_first_frame"), "client_gone", PREFILL, STOPPED, STOP],
  ["prefill: Abort call -> stopped now", at("awaiting_first_frame"), "abort_requested", PREFILL, STOPPED, STOP],
  ["prefill: drained to its end, no Abort", at("awaiting_first_frame"), "stream_end", PREFILL, at("ended"), ["release"]],
  ["prefill: a first frame reports nothing yet", at("awaiting_first_frame"), "first_frame", PREFILL, at("streaming"), []],

  // decode holding a handoff, before its first frame: deferred
  ["handoff, before first frame: client gone -> stop deferred", at("awaiting_first_frame"), "client_gone", HANDOFF, at("awaiting_first_frame"), ["defer_stop"]],
  ["handoff, before first frame: Abort call -> Abort deferred", at("awaiting_first_frame"), "abort_requested", HANDOFF, at("awaiting_first_frame"), ["defer_abort"]],
  ["deferred stop due: stopped", at("awaiting_first_frame"), "deferred_stop_due", HANDOFF, STOPPED, STOP],
  ["deferred Abort due: the RPC only, the stream goes on", at("streaming"), "deferred_abort_due", HANDOFF, at("streaming", { abortSent: true }), ["send_abort"]],
  ["deferred Abort due after the leg ended: nothing", at("ended"), "deferred_abort_due", HANDOFF, at("ended"), []],
  ["deferred stop due after a failure: still closed and aborted", at("ended"), "deferred_stop_due", HANDOFF, STOPPED, ["signal_stop", "close_call", "send_abort"]],
  ["deferred stop due after a stop: nothing", STOPPED, "deferred_stop_due", HANDOFF, STOPPED, []],

  // no handoff, or after the first frame: immediate
  ["no handoff, before first frame: client gone -> stopped now", at("awaiting_first_frame"), "client_gone", DECODE, STOPPED, STOP],
  ["no handoff: Abort call -> RPC now", at("awaiting_first_frame"), "abort_requested", DECODE, at("awaiting_first_frame", { abortSent: true }), ["send_abort"]],
  ["streaming with a handoff: client gone -> stopped now", at("streaming"), "client_gone", HANDOFF, STOPPED, STOP_HANDED_OVER],
  ["streaming: Abort call -> RPC now, stream goes on", at("streaming"), "abort_requested", HANDOFF, at("streaming", { abortSent: true }), ["send_abort"]],
  ["a second Abort call sends nothing more", at("streaming", { abortSent: true }), "abort_requested", DECODE, at("streaming", { abortSent: true }), []],
  ["a stop after an Abort RPC closes without a second RPC", at("streaming", { abortSent: true }), "client_gone", DECODE, STOPPED, ["signal_stop", "release", "stream_ended", "close_call"]],
  ["detached: client gone -> stopped now", at("detached"), "client_gone", HANDOFF, STOPPED, STOP_HANDED_OVER],

  // a consumer that pipes natively and reads a copy behind the client (the native tail)
  ["watch behind: only a detached leg", at("detached"), "watch_behind", DECODE, at("detached", { behind: true }), []],
  ["watch behind before detach: nothing", at("streaming"), "watch_behind", DECODE, at("streaming"), []],
  ["watched behind: client gone -> the copy checked first", at("detached", { behind: true }), "client_gone", HANDOFF, at("detached", { behind: true }), ["check_behind"]],
  ["the copy saw the engine's end: stopped without an Abort", at("detached", { behind: true }), "behind_end_seen", DECODE, { phase: "ended", stopped: true, abortSent: false }, ["signal_stop", "release", "stream_ended", "close_call"]],
  ["the copy did not see it: stopped with the Abort", at("detached", { behind: true }), "behind_stop_due", DECODE, STOPPED, STOP_HANDED_OVER],
  ["the check settles after the leg ended (the engine's end read): nothing", at("ended"), "behind_stop_due", DECODE, at("ended"), []],
  ["an end seen after the leg ended: nothing", at("ended"), "behind_end_seen", DECODE, at("ended"), []],
  ["watched behind, ended: client gone -> nothing", at("ended", { behind: true }), "client_gone", HANDOFF, at("ended", { behind: true }), []],
  ["the end seen after an Abort call: no second RPC", at("detached", { behind: true, abortSent: true }), "behind_end_seen", DECODE, { phase: "ended", stopped: true, abortSent: true }, ["signal_stop", "release", "stream_ended", "close_call"]],
  ["watched behind: the consumer's cancel still stops with the Abort", at("detached", { behind: true }), "cancel", DECODE, STOPPED, STOP_HANDED_OVER],
  ["the check settles after a stop: nothing", STOPPED, "behind_stop_due", DECODE, STOPPED, []],
  ["watched behind: the client's Abort call is still sent now", at("detached", { behind: true }), "abort_requested", DECODE, at("detached", { behind: true, abortSent: true }), ["send_abort"]],

  // the consumer's side
  ["detach: the frames left go as a stream", at("streaming"), "detach", DECODE, at("detached"), []],
  ["detach only from streaming", at("awaiting_first_frame"), "detach", DECODE, at("awaiting_first_frame"), []],
  ["consumer cancels: stopped", at("streaming"), "cancel", DECODE, STOPPED, STOP_HANDED_OVER],
  ["read to its end: no Abort", at("streaming"), "stream_end", HANDOFF, at("ended"), ["release", "stream_ended"]],
  ["detached body ends: no Abort", at("detached"), "stream_end", HANDOFF, at("ended"), ["release", "stream_ended"]],
  ["broke off mid-stream: closed, no Abort", at("streaming"), "stream_failed", DECODE, at("ended"), ["release", "stream_ended", "close_call"]],

  // an ended leg ignores the client
  ["ended: client gone -> nothing", at("ended"), "client_gone", HANDOFF, at("ended"), []],
  ["ended: Abort call -> nothing", at("ended"), "abort_requested", DECODE, at("ended"), []],
  ["ended: cancel -> nothing", at("ended"), "cancel", DECODE, at("ended"), []],
  ["stopped: a failure after it -> nothing", STOPPED, "stream_failed", DECODE, STOPPED, []],
];

describe("stepLeg", () => {
  it.each(TABLE)("%s", (_name, from, event, rules, to, actions) => {
    expect(stepLeg(from, event, rules)).toEqual({ state: to, actions });
  });
});

/** Runs events from the start; the actions in order. */
function run(rules: LegRules, events: LegEvent[]): { state: LegState; actions: string[] } {
  let state = INITIAL_LEG;
  const actions: string[] = [];
  for (const e of events) {
    const step = stepLeg(state, e, rules);
    state = step.state;
    actions.push(...step.actions);
  }
  return { state, actions };
}

const ALL_EVENTS: LegEvent[] = [
  "dispatched", "first_frame", "last_frame", "first_frame_failed", "timeout", "client_gone", "abort_requested",
  "deferred_stop_due", "deferred_abort_due", "cancel", "detach", "stream_end", "stream_failed",
  "watch_behind", "behind_end_seen", "behind_stop_due",
];
const CLIENT_EVENTS = new Set<LegEvent>(["client_gone", "abort_requested", "timeout", "cancel", "deferred_stop_due", "deferred_abort_due", "behind_stop_due"]);

describe("lifecycles", () => {
  it("decode with a handoff, client gone before its first frame: stopped once that frame came", () => {
    const { state, actions } = run(HANDOFF, ["dispatched", "client_gone", "deferred_stop_due"]);
    expect(actions).toEqual(["charge_load", "watch", "defer_stop", ...STOP]);
    expect(state).toEqual(STOPPED);
  });

  it("an Abort call before decode's first frame: deferred, then the RPC, and the stream runs to its end", () => {
    const { state, actions } = run(HANDOFF, ["dispatched", "abort_requested", "first_frame", "deferred_abort_due", "stream_end"]);
    expect(actions).toEqual(["charge_load", "watch", "defer_abort", "report_ok", "send_abort", "release", "stream_ended"]);
    expect(state).toEqual({ phase: "ended", stopped: false, abortSent: true });
  });

  it("watched behind: a client that closes on the end the copy then saw gets no Abort; one still generating gets it", () => {
    const path: LegEvent[] = ["dispatched", "first_frame", "detach", "watch_behind", "client_gone"];
    const seen = run(HANDOFF, [...path, "behind_end_seen", "stream_failed"]);
    expect(seen.actions).toEqual(["charge_load", "watch", "report_ok", "check_behind", "signal_stop", "release", "stream_ended", "close_call"]);
    expect(seen.state).toEqual({ phase: "ended", stopped: true, abortSent: false });
    const due = run(HANDOFF, [...path, "behind_stop_due", "stream_failed"]);
    expect(due.actions).toEqual(["charge_load", "watch", "report_ok", "check_behind", ...STOP_HANDED_OVER]);
    // The consumer read the end before the check settled: the leg ended, the check changes nothing.
    const ended = run(HANDOFF, [...path, "stream_end", "behind_stop_due"]);
    expect(ended.actions).not.toContain("send_abort");
  });

  it("normal completion sends no Abort, whatever the rules", () => {
    for (const rules of [DECODE, HANDOFF, PREFILL]) {
      for (const path of [["first_frame", "stream_end"], ["last_frame"], ["first_frame", "detach", "stream_end"]] as LegEvent[][]) {
        expect(run(rules, ["dispatched", ...path]).actions).not.toContain("send_abort");
      }
    }
  });

  it("every pair of events: the load is charged once and given back at most once, the Abort RPC goes at most once, nothing happens after a stop", () => {
    for (const rules of [DECODE, HANDOFF, PREFILL]) {
      for (const a of ALL_EVENTS) {
        for (const b of ALL_EVENTS) {
          for (const c of ALL_EVENTS) {
            const { actions, state } = run(rules, ["dispatched", a, b, c]);
            const count = (x: string) => actions.filter((y) => y === x).length;
            expect(count("charge_load")).toBe(1);
            expect(count("release")).toBeLessThanOrEqual(1);
            expect(count("send_abort")).toBeLessThanOrEqual(1);
            expect(count("stream_ended")).toBeLessThanOrEqual(1);
            if (state.phase === "ended") expect(stepLeg(state, "deferred_abort_due", rules).actions).toEqual([]);
            // An RPC is sent only for something the client (or a timeout) did.
            if (count("send_abort") > 0) expect([a, b, c].some((e) => CLIENT_EVENTS.has(e))).toBe(true);
          }
        }
      }
    }
  });
});
