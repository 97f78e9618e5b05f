// Engine outcomes feed the circuit breakers: a sink wrapper that records every
// engine_outcome event on this isolate's breaker for that engine (and shares it with the
// registry's breakers), then passes the event on.
// Both executors emit outcomes, so both surfaces get breakers without knowing about them.
import type { EventSink, GatewayEvent } from "../metrics/events.js";
import type { BreakerSettings, BreakerTransition } from "./breaker.js";
import { recordEngineOutcome } from "./breakers.js";

export function breakerRecordingSink(
  inner: EventSink,
  settings: BreakerSettings,
  onTransition?: (engine: string, model: string, t: BreakerTransition) => void,
  /** Also hand each outcome on (to the registry's shared breakers), fire-and-forget. */
  share?: (engine: string, status: number) => void,
): EventSink {
  return {
    emit(event: GatewayEvent) {
      if (event.type === "engine_outcome") {
        share?.(event.engine, event.status);
        const t = recordEngineOutcome(event.engine, event.status, settings);
        if (t) {
          console.warn(JSON.stringify({ msg: "circuit breaker transition", engine: event.engine, from: t.from, to: t.to }));
          onTransition?.(event.engine, event.model, t);
        }
      }
      inner.emit(event);
    },
  };
}
