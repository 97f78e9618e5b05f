// GET /admin/metrics/recent: the last data points this isolate wrote, decoded and raw, plus
// the sink's failure counters. Dev only: on when the DEV_METRICS var is "on" (wrangler.toml
// sets it for `npm start` / `wrangler dev`; a deployment removes it or sets "off"). Off, the
// route answers 404 like any unknown path and nothing is kept. Whenever the ADMIN_TOKEN
// secret is set, the route needs it like the rest of the admin API.
//
// The tee sits on the binding, not on the sink: when on, the rest of the app sees a METRICS
// binding that copies each point into the ring before passing it on. So the ring holds
// exactly what reached writeDataPoint (encoded, truncated, within the per-request budget),
// and sink wrappers added elsewhere (breaker recording) stay untouched.
import type { Hono } from "hono";
import type { Env } from "../../env.js";
import type { GatewayContext } from "../../context.js";
import type { PointRing } from "../../metrics/dev-ring.js";
import { decodeDataPoint, SCHEMA_VERSION } from "../../metrics/schema.js";
import type { MetricsCounters } from "../../metrics/sink.js";
import type { IsolateState } from "../../routing/isolate.js";
import { reject } from "../../errors/render.js";
import { bearerToken, tokenMatches } from "./auth.js";

export const DEV_METRICS_PATH = "/admin/metrics/recent";

/** The var is not part of the production Env: read it as an optional extra. */
type DevMetricsEnv = Env & { DEV_METRICS?: string };

export function devMetricsEnabled(env: unknown): boolean {
  return (env as DevMetricsEnv | undefined)?.DEV_METRICS === "on";
}

/** A binding that copies every point into the ring, then writes it to `inner`; with no
 *  binding, it logs the point's event as the sink would have. */
export function teeDataset(inner: AnalyticsEngineDataset | undefined, ring: PointRing): AnalyticsEngineDataset {
  return {
    writeDataPoint(point?: AnalyticsEngineDataPoint) {
      if (!point) return;
      ring.push(point);
      if (inner) inner.writeDataPoint(point);
      else console.log(JSON.stringify({ metric: decodeOrNull(point) }));
    },
  };
}

type GatewayApp = Hono<{ Bindings: Env; Variables: { gateway: GatewayContext } }>;

/** Registers the route and the tee. Call before the middleware that builds the gateway
 *  context (so its sink is given the teeing binding) and before the surfaces. */
export function mountDevMetrics(app: GatewayApp, isolate: IsolateState): void {
  const { ring, counters } = isolate.metrics;
  app.get(DEV_METRICS_PATH, async (c) => {
    if (!devMetricsEnabled(c.env)) return c.notFound();
    const expected = c.env.ADMIN_TOKEN;
    const given = bearerToken(c.req.header("authorization"));
    if (expected && (given === undefined || !(await tokenMatches(given, expected)))) {
      return reject(c.req.raw, 401, "admin_unauthorized", `${DEV_METRICS_PATH} needs Authorization: Bearer <ADMIN_TOKEN> while ADMIN_TOKEN is set`);
    }
    // In-flight counters of this isolate too, so a load test can see them return to zero.
    const body = { ...recentBody(ring, counters, c.req.query("type"), c.req.query("limit")), inFlightRequests: isolate.clientRequests.size, engineLoad: isolate.loads.total() };
    return c.json(body, 200, { "cache-control": "no-store" });
  });
  app.use("*", async (c, next) => {
    if (devMetricsEnabled(c.env)) c.env = { ...c.env, METRICS: teeDataset(c.env.METRICS, ring) };
    await next();
  });
}

export interface RecentBody {
  schemaVersion: string;
  capacity: number;
  writeFailures: number;
  droppedOverLimit: number;
  /** Oldest first. `point` is exactly what went to writeDataPoint (NaN shows as null in JSON). */
  points: { seq: number; at: string; event: unknown; point: AnalyticsEngineDataPoint }[];
}

/** `type` keeps one event type; `limit` keeps the newest n. */
export function recentBody(ring: PointRing, counters: MetricsCounters, type?: string, limit?: string): RecentBody {
  let entries = ring.entries().map((e) => ({ ...e, event: decodeOrNull(e.point) }));
  if (type) entries = entries.filter((e) => e.point.blobs?.[1] === type);
  const n = limit === undefined ? NaN : Number(limit);
  if (Number.isInteger(n) && n >= 0) entries = entries.slice(Math.max(0, entries.length - n));
  return { schemaVersion: SCHEMA_VERSION, capacity: ring.capacity, ...counters, points: entries };
}

function decodeOrNull(point: AnalyticsEngineDataPoint): unknown {
  try {
    return decodeDataPoint(point);
  } catch {
    return null;
  }
}
