// This isolate's circuit breakers, one per engine, fed by engine outcomes from the request
// path. The shared view across isolates lives in the registry Durable Object; this local one
// reacts at once, without waiting for a snapshot refresh.
import { canExecute, newBreaker, recordOutcome, type Breaker, type BreakerSettings, type BreakerTransition } from "./breaker.js";

const breakers = new Map<string, Breaker>();

function breakerOf(engine: string, now: number): Breaker {
  let b = breakers.get(engine);
  if (!b) {
    b = newBreaker(now);
    breakers.set(engine, b);
  }
  return b;
}

export function engineAdmitted(engine: string, s: BreakerSettings, now: number = Date.now()): boolean {
  const b = breakers.get(engine);
  return b === undefined || canExecute(b, s, now);
}

export function recordEngineOutcome(engine: string, status: number, s: BreakerSettings, now: number = Date.now()): BreakerTransition | undefined {
  return recordOutcome(breakerOf(engine, now), s, status, now);
}

export function localBreakerState(engine: string): Breaker | undefined {
  return breakers.get(engine);
}

/** Forget all breakers (tests). */
export function resetLocalBreakers(): void {
  breakers.clear();
}
