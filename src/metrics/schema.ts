// The Analytics Engine layout of every event, defined once: which blob and double holds
// what. index1 = model (the sampling key: operators slice by model first). blob1 = schema
// version, blob2 = event type. Durations that did not happen are written as NaN and flagged
// in a blob, never as 0. docs/metrics.md documents the same table and its SQL.
import type { GatewayEvent } from "./events.js";

export const SCHEMA_VERSION = "v1";

type EventOf<T extends GatewayEvent["type"]> = Extract<GatewayEvent, { type: T }>;
interface Layout<E> {
  /** Event fields in blob3.. order. */
  blobs: (keyof E & string)[];
  /** Event fields in double1.. order. */
  doubles: (keyof E & string)[];
}

export const LAYOUTS: { [T in GatewayEvent["type"]]: Layout<EventOf<T>> } = {
  request: { blobs: ["surface", "endpoint", "backend", "streaming", "errorCode"], doubles: ["status", "durationMs"] },
  pd_decision: {
    blobs: ["surface", "connectorMode", "prefill", "skipReason", "kvInjection", "prefillEngine", "decodeEngine"],
    doubles: ["n", "prefillMs", "kvTransferMs"],
  },
  engine_outcome: { blobs: ["engine", "leg"], doubles: ["status"] },
  kv_transfer_failure: { blobs: ["prefillEngine"], doubles: [] },
  stream_complete: {
    blobs: ["surface", "endpoint"],
    doubles: ["ttftMs", "tpotMs", "generationMs", "inputTokens", "outputTokens"],
  },
};

export function encodeEvent(event: GatewayEvent): AnalyticsEngineDataPoint {
  const layout = LAYOUTS[event.type] as unknown as Layout<Record<string, unknown>>;
  const e = event as unknown as Record<string, unknown>;
  const blobs = [SCHEMA_VERSION, event.type, ...layout.blobs.map((k) => blobString(e[k]))];
  const doubles = layout.doubles.map((k) => (typeof e[k] === "number" ? (e[k] as number) : Number.NaN));
  return { indexes: [String(e.model ?? "").slice(0, 96)], blobs, doubles };
}

/** The inverse of encodeEvent (tests, the local dev sink). */
export function decodeDataPoint(point: AnalyticsEngineDataPoint): GatewayEvent {
  const blobs = (point.blobs ?? []) as (string | null)[];
  const type = blobs[1] as GatewayEvent["type"];
  const layout = LAYOUTS[type] as unknown as Layout<Record<string, unknown>> | undefined;
  if (blobs[0] !== SCHEMA_VERSION || !layout) throw new Error(`not a ${SCHEMA_VERSION} data point: ${JSON.stringify(point)}`);
  const out: Record<string, unknown> = { type, model: (point.indexes ?? [])[0] ?? "" };
  layout.blobs.forEach((k, i) => {
    const v = blobs[i + 2];
    if (v !== "" && v !== null && v !== undefined) out[k] = v === "true" ? true : v === "false" ? false : v;
  });
  layout.doubles.forEach((k, i) => {
    const v = point.doubles?.[i];
    if (typeof v === "number" && !Number.isNaN(v)) out[k] = v;
  });
  return out as unknown as GatewayEvent;
}

function blobString(v: unknown): string {
  if (v === undefined || v === null) return "";
  return String(v);
}
