// Where events go: the METRICS Analytics Engine binding when bound, else one JSON log line
// each. writeDataPoint is fire-and-forget; a throwing binding is caught and counted so
// metrics never break a request.
import type { EventSink, GatewayEvent } from "./events.js";
import { encodeEvent } from "./schema.js";

let writeFailures = 0;

export function metricsWriteFailures(): number {
  return writeFailures;
}

export function createEventSink(dataset: AnalyticsEngineDataset | undefined): EventSink {
  if (!dataset) return { emit: (event: GatewayEvent) => console.log(JSON.stringify({ metric: event })) };
  return {
    emit(event: GatewayEvent) {
      try {
        dataset.writeDataPoint(encodeEvent(event));
      } catch (err) {
        writeFailures++;
        if (writeFailures === 1 || writeFailures % 1000 === 0) {
          console.warn(JSON.stringify({ msg: "metrics write failed", failures: writeFailures, error: String(err) }));
        }
      }
    },
  };
}
