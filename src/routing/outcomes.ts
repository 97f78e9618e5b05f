// Engine outcomes, reported by the executor through one explicit call: each feeds this
// isolate's breaker for the engine and the registry's shared one, and becomes an
// engine_outcome event. Capacity pushback (429 by default) is neither a success nor a
// failure for a breaker (upstream smg PR 2163), though the attempt is still retried.
import type { EngineTarget, Leg } from "../core/types.js";
import type { EventSink } from "../metrics/events.js";
import type { OutcomeReporter } from "../pd/leg.js";
import type { BreakerSettings } from "./breaker.js";
import type { LocalBreakers } from "./breakers.js";

export interface OutcomeReporterOptions {
  model: string;
  events: EventSink;
  breakers: LocalBreakers;
  settings: BreakerSettings;
  capacityStatusCodes: readonly number[];
  /** Hands the outcome on to the registry's shared breakers, fire-and-forget. */
  share?(engine: string, status: number): void;
}

export function outcomeReporter(o: OutcomeReporterOptions): OutcomeReporter {
  return {
    report(engine: EngineTarget, leg: Leg, status: number) {
      o.events.emit({ type: "engine_outcome", model: o.model, engine: engine.name, leg, status });
      if (o.capacityStatusCodes.includes(status)) return;
      o.share?.(engine.name, status);
      const t = o.breakers.record(engine.name, status, o.settings);
      if (!t) return;
      console.warn(JSON.stringify({ msg: "circuit breaker transition", engine: engine.name, from: t.from, to: t.to }));
      o.events.emit({ type: "breaker_transition", model: o.model, engine: engine.name, from: t.from, to: t.to });
    },
  };
}
