// Whether an engine may take a new request now: its shared health (registry snapshot) says
// routable, the shared breaker is not open, and this isolate's own breaker admits it.
import type { EngineConfig } from "../config/schema.js";
import type { BreakerSettings } from "./breaker.js";
import type { LocalBreakers } from "./breakers.js";
import { isRoutable } from "./health-state.js";
import type { RoutingSnapshot } from "./snapshot.js";

export function engineRoutable(snapshot: RoutingSnapshot, local: LocalBreakers, breaker: BreakerSettings): (engine: EngineConfig) => boolean {
  return (engine) =>
    local.admits(engine.name, breaker) && isRoutable(snapshot.health(engine.name)) && snapshot.breaker(engine.name) !== "open";
}
