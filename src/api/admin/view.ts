// How the admin API shows a registry engine: the stored record plus its shared health and
// breaker state, in snake_case like the rest of the API. Pure.
import { currentState, type BreakerSettings } from "../../routing/breaker.js";
import type { RegistryEngineState } from "../../routing/registry-types.js";

export function engineView(s: RegistryEngineState, breakerSettings: BreakerSettings, now: number = Date.now()) {
  const h = s.health;
  const b = s.breaker;
  return {
    ...s.engine,
    health: h
      ? {
          status: h.status,
          consecutive_successes: h.consecutiveSuccesses,
          consecutive_failures: h.consecutiveFailures,
          last_probe_at: h.lastProbeAt === undefined ? null : new Date(h.lastProbeAt).toISOString(),
          last_error: h.lastError ?? null,
        }
      : null,
    breaker: b
      ? {
          // The lazy open -> half-open move, on a copy, as routing would see it now.
          state: currentState({ ...b }, breakerSettings, now).state,
          consecutive_failures: b.consecutiveFailures,
          consecutive_successes: b.consecutiveSuccesses,
          changed_at: new Date(b.changedAt).toISOString(),
        }
      : null,
  };
}
