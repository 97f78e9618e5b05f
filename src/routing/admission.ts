// Whether an engine may take a new request now: its shared health (registry snapshot) says
// routable, the shared breaker is not open, and this isolate's own breaker admits it; and, for
// the client's error when none may, why not.
import type { EngineConfig } from "../config/schema.js";
import type { BreakerSettings } from "./breaker.js";
import type { LocalBreakers } from "./breakers.js";
import { isRoutable } from "./health-state.js";
import type { RoutingSnapshot } from "./snapshot.js";

export function engineRoutable(snapshot: RoutingSnapshot, local: LocalBreakers, breaker: BreakerSettings): (engine: EngineConfig) => boolean {
  const why = whyNotRoutable(snapshot, local, breaker);
  return (engine) => why(engine) === undefined;
}

/** Why an engine may not take traffic now ("circuit breaker open", "health not_ready"), or
 *  undefined when it may. */
export function whyNotRoutable(snapshot: RoutingSnapshot, local: LocalBreakers, breaker: BreakerSettings): (engine: EngineConfig) => string | undefined {
  return (engine) => {
    if (!local.admits(engine.name, breaker) || snapshot.breaker(engine.name) === "open") return "circuit breaker open";
    const health = snapshot.health(engine.name);
    return isRoutable(health) ? undefined : `health ${health!.status}`;
  };
}
