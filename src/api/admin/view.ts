// How the admin API shows an engine: config engines and registry engines alike, each with its
// source, its shared health and breaker state (from the registry object), and what this
// isolate knows of it (its own breaker, its in-flight requests). snake_case like the rest of
// the API. Pure.
import { DEFAULT_CLUSTER, type EngineConfig, type EngineRole } from "../../config/schema.js";
import { currentState, type Breaker, type BreakerSettings } from "../../routing/breaker.js";
import type { EngineHealth } from "../../routing/health-state.js";
import type { RegistryEngineState } from "../../routing/registry-types.js";

/** What one isolate knows of an engine (the one that answered the admin request). */
export interface IsolateView {
  breaker(name: string): Breaker | undefined;
  inFlight(name: string): number;
}

function healthView(h: EngineHealth | undefined) {
  return h
    ? {
        status: h.status,
        consecutive_successes: h.consecutiveSuccesses,
        consecutive_failures: h.consecutiveFailures,
        last_probe_at: h.lastProbeAt === undefined ? null : new Date(h.lastProbeAt).toISOString(),
        last_error: h.lastError ?? null,
      }
    : null;
}

function breakerView(b: Breaker | undefined, settings: BreakerSettings, now: number) {
  return b
    ? {
        // The lazy open -> half-open move, on a copy, as routing would see it now.
        state: currentState({ ...b }, settings, now).state,
        consecutive_failures: b.consecutiveFailures,
        consecutive_successes: b.consecutiveSuccesses,
        changed_at: new Date(b.changedAt).toISOString(),
      }
    : null;
}

function isolateView(name: string, isolate: IsolateView | undefined, settings: BreakerSettings, now: number) {
  if (!isolate) return undefined;
  const b = isolate.breaker(name);
  return { breaker: b ? currentState({ ...b }, settings, now).state : null, in_flight: isolate.inFlight(name) };
}

export function engineView(s: RegistryEngineState, breakerSettings: BreakerSettings, isolate?: IsolateView, now: number = Date.now()) {
  const local = isolateView(s.engine.id, isolate, breakerSettings, now);
  return {
    source: "registry" as const,
    ...s.engine,
    cluster: s.engine.cluster ?? DEFAULT_CLUSTER,
    health: healthView(s.health),
    breaker: breakerView(s.breaker, breakerSettings, now),
    ...(local ? { isolate: local } : {}),
  };
}

/** A config engine, shaped like a registry one: `id` is its name; it is always active. */
export function configEngineView(
  model: string,
  role: EngineRole,
  e: EngineConfig,
  shared: { health?: EngineHealth; breaker?: Breaker },
  breakerSettings: BreakerSettings,
  isolate: IsolateView,
  now: number = Date.now(),
) {
  const { name, url, transport, labels, ...overrides } = e;
  return {
    source: "config" as const,
    id: name,
    model,
    role,
    url,
    transport,
    labels: labels ?? {},
    status: "active" as const,
    ...overrides,
    cluster: overrides.cluster ?? DEFAULT_CLUSTER,
    health: healthView(shared.health),
    breaker: breakerView(shared.breaker, breakerSettings, now),
    isolate: isolateView(name, isolate, breakerSettings, now)!,
  };
}
