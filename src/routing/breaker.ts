// Circuit breaker state machine per engine (pd-reference 7.4): consecutive-count, upstream
// semantics. Pure: the caller passes the clock, so a table test reaches every transition.
import { RETRYABLE_STATUSES } from "../core/errors.js";

import type { BreakerState } from "../core/types.js";

export type { BreakerState } from "../core/types.js";

export interface BreakerSettings {
  failure_threshold: number;
  success_threshold: number;
  timeout_secs: number;
  disabled: boolean;
}

export interface Breaker {
  state: BreakerState;
  consecutiveFailures: number;
  consecutiveSuccesses: number;
  /** When the state last changed (ms). */
  changedAt: number;
}

export interface BreakerTransition {
  from: BreakerState;
  to: BreakerState;
}

export function newBreaker(now: number): Breaker {
  return { state: "closed", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: now };
}

/** Whether two states of one breaker act alike: the same state since the same time and the
 *  same failure run. The success run only counts half-open (a closed breaker's is never
 *  read, and every move resets it), so a success on a clean closed breaker changes nothing
 *  another isolate needs to learn. */
export function actsAlike(a: Breaker, b: Breaker): boolean {
  return (
    a.state === b.state &&
    a.changedAt === b.changedAt &&
    a.consecutiveFailures === b.consecutiveFailures &&
    (a.state !== "half_open" || a.consecutiveSuccesses === b.consecutiveSuccesses)
  );
}

/** A status counts as a failure iff it is retryable (408, 429, 5xx gateway errors); every
 *  other status, 400 and 404 included, is the engine working correctly. */
export function isFailureStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

function move(b: Breaker, to: BreakerState, now: number): BreakerTransition {
  const t = { from: b.state, to };
  b.state = to;
  b.changedAt = now;
  b.consecutiveFailures = 0;
  b.consecutiveSuccesses = 0;
  return t;
}

/** Open -> half-open happens lazily on the first read after the timeout. */
export function currentState(b: Breaker, s: BreakerSettings, now: number): { state: BreakerState; transition?: BreakerTransition } {
  if (b.state === "open" && now - b.changedAt >= s.timeout_secs * 1000) {
    return { state: "half_open", transition: move(b, "half_open", now) };
  }
  return { state: b.state };
}

/** Closed and half-open admit traffic (half-open admits all of it, as upstream). */
export function canExecute(b: Breaker, s: BreakerSettings, now: number): boolean {
  if (s.disabled) return true;
  return currentState(b, s, now).state !== "open";
}

/** Records one outcome; returns the transition it caused, if any. */
export function recordOutcome(b: Breaker, s: BreakerSettings, status: number, now: number): BreakerTransition | undefined {
  if (s.disabled) return undefined;
  const lazy = currentState(b, s, now).transition;
  const failed = isFailureStatus(status);
  if (failed) {
    b.consecutiveFailures++;
    b.consecutiveSuccesses = 0;
    if (b.state === "half_open") return move(b, "open", now);
    if (b.state === "closed" && b.consecutiveFailures >= s.failure_threshold) return move(b, "open", now);
  } else {
    b.consecutiveSuccesses++;
    b.consecutiveFailures = 0;
    if (b.state === "half_open" && b.consecutiveSuccesses >= s.success_threshold) return move(b, "closed", now);
  }
  return lazy;
}
