// Whether an engine may take a new request now: its shared health (registry snapshot) says
// routable, the shared breaker is not open, and this isolate's own breaker admits it.
import type { EngineConfig } from "../config/schema.js";
import type { BreakerSettings } from "./breaker.js";
import { engineAdmitted } from "./breakers.js";
import { isRoutable } from "./health-state.js";
import type { RoutingSnapshot } from "./snapshot.js";

export function engineRoutable(snapshot: RoutingSnapshot, breaker: BreakerSettings): (engine: EngineConfig) => boolean {
  return (engine) =>
    engineAdmitted(engine.name, breaker) && isRoutable(snapshot.health(engine.name)) && snapshot.breaker(engine.name) !== "open";
}
