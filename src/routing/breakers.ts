// This isolate's circuit breakers, one per engine, fed by engine outcomes from the request
// path. The shared view across isolates lives in the registry Durable Object; this local one
// reacts at once, without waiting for a snapshot refresh.
import { canExecute, newBreaker, recordOutcome, type Breaker, type BreakerSettings, type BreakerTransition } from "./breaker.js";

export class LocalBreakers {
  private readonly byEngine = new Map<string, Breaker>();

  admits(engine: string, s: BreakerSettings, now: number = Date.now()): boolean {
    const b = this.byEngine.get(engine);
    return b === undefined || canExecute(b, s, now);
  }

  record(engine: string, status: number, s: BreakerSettings, now: number = Date.now()): BreakerTransition | undefined {
    let b = this.byEngine.get(engine);
    if (!b) {
      b = newBreaker(now);
      this.byEngine.set(engine, b);
    }
    return recordOutcome(b, s, status, now);
  }

  state(engine: string): Breaker | undefined {
    return this.byEngine.get(engine);
  }
}
