// Where events go: the METRICS Analytics Engine binding when bound, else one JSON log line
// each (with DEV_METRICS on, the binding it gets also tees into the dev ring: dev-route.ts).
// One sink per request context, so it can hold the per-invocation point budget. Emitting is
// synchronous and never throws or awaits: writeDataPoint is fire-and-forget, and a throwing
// binding (or a bug in an encoder) is caught and counted so metrics cannot break or slow a
// request.
import type { EventSink, GatewayEvent } from "./events.js";
import { MAX_POINTS_PER_INVOCATION } from "./limits.js";
import { encodeEvent } from "./schema.js";

export interface MetricsCounters {
  /** writeDataPoint (or encoding) threw. */
  writeFailures: number;
  /** Points not written because their request had used its per-invocation budget. */
  droppedOverLimit: number;
}

/** Counters that outlive the request that incremented them: the isolate state owns them
 *  (routing/isolate.ts), and every sink of that isolate adds to them. */
export function newMetricsCounters(): MetricsCounters {
  return { writeFailures: 0, droppedOverLimit: 0 };
}

export interface SinkOptions {
  /** Points this sink may write; Analytics Engine accepts 250 per invocation. */
  maxPoints?: number;
  /** Where failures and drops are counted (the isolate's); default: counted nowhere shared. */
  counters?: MetricsCounters;
}

export function createEventSink(dataset: AnalyticsEngineDataset | undefined, opts: SinkOptions = {}): EventSink {
  const maxPoints = opts.maxPoints ?? MAX_POINTS_PER_INVOCATION;
  const counters = opts.counters ?? newMetricsCounters();
  let written = 0;
  let dropped = 0;
  return {
    emit(event: GatewayEvent) {
      if (written >= maxPoints) {
        dropped++;
        counters.droppedOverLimit++;
        // Once per request: the first drop says why; the total is on the dev endpoint.
        if (dropped === 1) {
          console.warn(JSON.stringify({ msg: "metrics point budget used up for this request; dropping further points", limit: maxPoints, event: event.type }));
        }
        return;
      }
      written++;
      let point: AnalyticsEngineDataPoint;
      try {
        point = encodeEvent(event);
      } catch (err) {
        failed(err, event, counters);
        return;
      }
      if (!dataset) {
        console.log(JSON.stringify({ metric: event }));
        return;
      }
      try {
        dataset.writeDataPoint(point);
      } catch (err) {
        failed(err, event, counters);
      }
    },
  };
}

function failed(err: unknown, event: GatewayEvent, counters: MetricsCounters): void {
  counters.writeFailures++;
  // The first failure and then every 1000th: a broken binding must not flood the log.
  if (counters.writeFailures === 1 || counters.writeFailures % 1000 === 0) {
    console.warn(JSON.stringify({ msg: "metrics write failed", failures: counters.writeFailures, event: event.type, error: String(err) }));
  }
}
