// The Analytics Engine layout of every event, defined once: which blob and double holds
// what. docs/metrics.md documents the same table (a unit test keeps the two in step) and
// src/metrics/queries.ts is the SQL written against it.
//
// index1 = model: Analytics Engine samples per index value, so the index must be what
// operators slice by first. Keyed by model, a busy model is downsampled on its own and a
// quiet one keeps every point; per-model rates and quantiles stay accurate. A per-request
// key would defeat sampling; an engine key would mix models in one sample.
// blob1 = schema version, blob2 = event type, then the event's own blobs from blob3.
// A duration that did not happen is NaN (never 0) and the reason is in a blob, so SQL
// filters on the flag blob rather than on the double.
// Compatibility: positions of a version are frozen; new fields are only appended. Moving or
// re-purposing a position needs a new SCHEMA_VERSION.
import type { GatewayEvent, PdDecisionEvent, StreamCompleteEvent, EngineOutcomeEvent } from "./events.js";
import { RETRYABLE_STATUSES } from "../core/errors.js";
import { fitBlobs, MAX_INDEX_BYTES, truncateUtf8 } from "./limits.js";

export const SCHEMA_VERSION = "v1";

type EventOf<T extends GatewayEvent["type"]> = Extract<GatewayEvent, { type: T }>;

/** A blob computed from the event (a reason flag): written, and not decoded back. */
export interface FlagBlob<E> {
  flag: string;
  of(event: E): string;
}
export type BlobSpec<E> = (keyof E & string) | FlagBlob<E>;

export interface Layout<E> {
  /** blob3.. in order. */
  blobs: BlobSpec<E>[];
  /** double1.. in order. */
  doubles: (keyof E & string)[];
}

/** Why a pd_decision has no KV-transfer duration (blob10). */
export function kvTransferFlag(e: PdDecisionEvent): "measured" | "prefill_skipped" | "not_injected" | "not_measured" {
  if (typeof e.kvTransferMs === "number") return "measured";
  if (e.prefill === "skipped") return "prefill_skipped";
  if (e.kvInjection === "none") return "not_injected";
  // Injected, but this path times no transfer window (the HTTP executor, as upstream).
  return "not_measured";
}

export function ttftFlag(e: StreamCompleteEvent): "measured" | "no_tokens" {
  return typeof e.ttftMs === "number" ? "measured" : "no_tokens";
}

export function tpotFlag(e: StreamCompleteEvent): "measured" | "no_tokens" | "single_token" {
  if (typeof e.tpotMs === "number") return "measured";
  return typeof e.ttftMs === "number" ? "single_token" : "no_tokens";
}

/** The breaker's reading of an outcome: failure iff retryable status (pd-reference 2.9). */
export function breakerOutcome(e: EngineOutcomeEvent): "success" | "failure" {
  return RETRYABLE_STATUSES.has(e.status) ? "failure" : "success";
}

export const LAYOUTS: { [T in GatewayEvent["type"]]: Layout<EventOf<T>> } = {
  request: {
    blobs: ["surface", "endpoint", "backend", "streaming", "errorCode"],
    doubles: ["status", "durationMs"],
  },
  pd_decision: {
    blobs: [
      "surface", "connectorMode", "prefill", "skipReason", "kvInjection", "prefillEngine", "decodeEngine",
      { flag: "kv_transfer", of: kvTransferFlag }, "cluster",
    ],
    doubles: ["n", "prefillMs", "kvTransferMs"],
  },
  engine_outcome: { blobs: ["engine", "leg", { flag: "breaker_outcome", of: breakerOutcome }], doubles: ["status"] },
  kv_transfer_failure: { blobs: ["prefillEngine"], doubles: [] },
  stream_complete: {
    blobs: ["surface", "endpoint", { flag: "ttft", of: ttftFlag }, { flag: "tpot", of: tpotFlag }],
    doubles: ["ttftMs", "tpotMs", "generationMs", "inputTokens", "outputTokens"],
  },
  breaker_transition: { blobs: ["engine", "from", "to"], doubles: [] },
  engine_selection: { blobs: ["engine", "leg", "policy", "cluster"], doubles: [] },
};

/** Event fields that are booleans (blobs hold "true"/"false"). */
const BOOLEAN_FIELDS: ReadonlySet<string> = new Set(["streaming"]);

type AnyLayout = Layout<Record<string, unknown>>;
const layoutOf = (type: string): AnyLayout | undefined =>
  (LAYOUTS as unknown as Record<string, AnyLayout | undefined>)[type];

/** The 1-based blob position of a field or flag (for SQL and docs). */
export function blobPosition(type: GatewayEvent["type"], name: string): number {
  const i = layoutOf(type)!.blobs.findIndex((b) => (typeof b === "string" ? b : b.flag) === name);
  if (i < 0) throw new Error(`${type} has no blob ${name}`);
  return i + 3;
}

/** The 1-based double position of a field (for SQL and docs). */
export function doublePosition(type: GatewayEvent["type"], name: string): number {
  const i = layoutOf(type)!.doubles.indexOf(name);
  if (i < 0) throw new Error(`${type} has no double ${name}`);
  return i + 1;
}

/** One data point for one event, within the Analytics Engine limits (src/metrics/limits.ts):
 *  the model is cut to the 96-byte index, over-long blobs are cut to fit 16 KB in total. */
export function encodeEvent(event: GatewayEvent): AnalyticsEngineDataPoint {
  const encode = (encoders[event.type] ??= compileEncoder(event.type));
  return encode(event as unknown as Record<string, unknown>);
}

type Encoder = (e: Record<string, unknown>) => AnalyticsEngineDataPoint;
// Module-level: one compiled encoder per event type, derived from LAYOUTS (immutable).
const encoders: Partial<Record<string, Encoder>> = {};

/** A layout turned into one function (built on the type's first event): the blob and double
 *  readers resolved once, not per event. */
function compileEncoder(type: string): Encoder {
  const layout = layoutOf(type)!;
  const blobReaders = layout.blobs.map((b): ((e: Record<string, unknown>) => string) => (typeof b === "string" ? (e) => blobString(e[b]) : b.of));
  const doubleKeys = layout.doubles;
  return (e) => {
    const blobs = [SCHEMA_VERSION, type];
    for (const read of blobReaders) blobs.push(read(e));
    const doubles: number[] = [];
    for (const k of doubleKeys) {
      const v = e[k];
      doubles.push(typeof v === "number" ? v : Number.NaN);
    }
    const model = e.model;
    return { indexes: [truncateUtf8(typeof model === "string" ? model : String(model ?? ""), MAX_INDEX_BYTES)], blobs: fitBlobs(blobs), doubles };
  };
}

/** The inverse of encodeEvent (tests, the dev endpoint). Flags are not event fields and are
 *  skipped; empty blobs and NaN doubles are absent fields. */
export function decodeDataPoint(point: AnalyticsEngineDataPoint): GatewayEvent {
  const blobs = (point.blobs ?? []) as (string | null)[];
  const type = blobs[1] as GatewayEvent["type"];
  const layout = typeof type === "string" ? layoutOf(type) : undefined;
  if (blobs[0] !== SCHEMA_VERSION || !layout) throw new Error(`not a ${SCHEMA_VERSION} data point: ${JSON.stringify(point)}`);
  const out: Record<string, unknown> = { type, model: (point.indexes ?? [])[0] ?? "" };
  layout.blobs.forEach((k, i) => {
    if (typeof k !== "string") return;
    const v = blobs[i + 2];
    if (v === "" || v === null || v === undefined) return;
    out[k] = BOOLEAN_FIELDS.has(k) ? v === "true" : v;
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
