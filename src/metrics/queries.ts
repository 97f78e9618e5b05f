// The query catalogue: ready SQL for the Analytics Engine SQL API over the schema in
// schema.ts. `npm run metrics -- <name>` runs one (src/metrics/cli.ts); docs/metrics.md shows
// each rendered for `--since 1h` (a unit test checks the two agree). Column positions come
// from the layout, never typed by hand, so a layout change cannot leave a query behind.
//
// Dialect notes (Analytics Engine SQL, not full ClickHouse): no JOIN/UNION, no sumIf/countIf,
// so conditional counts are SUM(IF(cond, _sample_interval, 0)). Every count is weighted by
// _sample_interval (each stored row stands for that many written points) and every quantile
// uses quantileExactWeighted(q)(value, _sample_interval). Durations that did not happen are
// NaN; queries select them away by their flag blob, never by the double.
import type { GatewayEvent } from "./events.js";
import { blobPosition, doublePosition, SCHEMA_VERSION } from "./schema.js";

export const DEFAULT_DATASET = "vllm_edge_gateway";

export interface Since {
  /** As the user wrote it, e.g. "1h". */
  text: string;
  amount: number;
  unit: "MINUTE" | "HOUR" | "DAY";
  seconds: number;
}

/** Analytics Engine keeps three months. */
const MAX_SINCE_SECONDS = 92 * 86_400;
const UNITS = { m: ["MINUTE", 60], h: ["HOUR", 3_600], d: ["DAY", 86_400] } as const;

export class QueryInputError extends Error {}

export function parseSince(text: string): Since {
  const m = /^([1-9][0-9]{0,5})([mhd])$/.exec(text.trim());
  if (!m) throw new QueryInputError(`--since: expected a whole number and a unit m, h or d (15m, 1h, 7d); got '${text}'`);
  const amount = Number(m[1]);
  const [unit, perUnit] = UNITS[m[2] as keyof typeof UNITS];
  const seconds = amount * perUnit;
  if (seconds > MAX_SINCE_SECONDS) throw new QueryInputError(`--since: at most 92d (Analytics Engine keeps three months of data); got '${text}'`);
  return { text: text.trim(), amount, unit, seconds };
}

export interface QueryContext {
  since: Since;
  dataset: string;
}

export interface MetricsQuery {
  name: string;
  title: string;
  sql(ctx: QueryContext): string;
}

const blob = (type: GatewayEvent["type"], field: string) => `blob${blobPosition(type, field)}`;
const double = (type: GatewayEvent["type"], field: string) => `double${doublePosition(type, field)}`;
const SI = "_sample_interval";

function from(ctx: QueryContext, type: GatewayEvent["type"], extra?: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(ctx.dataset)) throw new QueryInputError(`--dataset: not a plain SQL identifier: '${ctx.dataset}'`);
  const where = [`blob1 = '${SCHEMA_VERSION}'`, `blob2 = '${type}'`, `timestamp > NOW() - INTERVAL '${ctx.since.amount}' ${ctx.since.unit}`];
  if (extra) where.push(extra);
  return `FROM ${ctx.dataset}\nWHERE ${where.join(" AND ")}`;
}

const quantiles = (value: string, unit: string) =>
  [0.5, 0.95, 0.99].map((q) => `  quantileExactWeighted(${q})(${value}, ${SI}) AS p${Math.round(q * 100)}_${unit}`).join(",\n");

const share = (cond: string) => `SUM(IF(${cond}, ${SI}, 0)) / SUM(${SI})`;

const status = double("request", "status");
const pdPrefill = blob("pd_decision", "prefill");
const pdPrefillMs = double("pd_decision", "prefillMs");

export const QUERIES: readonly MetricsQuery[] = [
  {
    name: "requests",
    title: "Request rate and error rate by model and surface (errors: status >= 400 except 499 client cancellations)",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("request", "surface")} AS surface,
  SUM(${SI}) AS requests,
  SUM(${SI}) / ${ctx.since.seconds} AS per_second,
  ${share(`${status} >= 400 AND ${status} != 499`)} AS error_rate,
  ${share(`${status} >= 500`)} AS server_error_rate,
  ${share(`${status} = 499`)} AS cancelled_rate
${from(ctx, "request")}
GROUP BY model, surface
ORDER BY requests DESC`,
  },
  {
    name: "request-errors",
    title: "Failed and cancelled requests by model, surface, error code and status",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("request", "surface")} AS surface,
  ${blob("request", "errorCode")} AS error_code,
  ${status} AS status,
  SUM(${SI}) AS requests
${from(ctx, "request", `${status} >= 400`)}
GROUP BY model, surface, error_code, status
ORDER BY requests DESC`,
  },
  {
    name: "ttft",
    title: "Time to first token (ms), p50/p95/p99 by model and surface (streamed responses with a token)",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("stream_complete", "surface")} AS surface,
  SUM(${SI}) AS streams,
${quantiles(double("stream_complete", "ttftMs"), "ms")}
${from(ctx, "stream_complete", `${blob("stream_complete", "ttft")} = 'measured'`)}
GROUP BY model, surface
ORDER BY streams DESC`,
  },
  {
    name: "tpot",
    title: "Time per output token after the first (ms), p50/p95/p99 by model and surface",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("stream_complete", "surface")} AS surface,
  SUM(${SI}) AS streams,
${quantiles(double("stream_complete", "tpotMs"), "ms")}
${from(ctx, "stream_complete", `${blob("stream_complete", "tpot")} = 'measured'`)}
GROUP BY model, surface
ORDER BY streams DESC`,
  },
  {
    name: "prefill-duration",
    title: "Prefill leg duration (ms), p50/p95/p99 by model (requests whose prefill leg ran)",
    sql: (ctx) => `SELECT
  index1 AS model,
  SUM(${SI}) AS prefills,
${quantiles(pdPrefillMs, "ms")}
${from(ctx, "pd_decision", `${pdPrefill} = 'ran'`)}
GROUP BY model
ORDER BY prefills DESC`,
  },
  {
    name: "kv-transfer",
    title: "KV-transfer duration (ms), p50/p95/p99 by model and connector (only where KV params were injected or relayed)",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("pd_decision", "connectorMode")} AS connector_mode,
  SUM(${SI}) AS transfers,
${quantiles(double("pd_decision", "kvTransferMs"), "ms")}
${from(ctx, "pd_decision", `${blob("pd_decision", "kv_transfer")} = 'measured'`)}
GROUP BY model, connector_mode
ORDER BY transfers DESC`,
  },
  {
    name: "prefill-skips",
    title: "Prefill skip rate and the prefill engine time saved by skips, by model (estimate: see docs/metrics.md)",
    sql: (ctx) => `SELECT
  model,
  ran,
  skipped,
  skipped / (ran + skipped) AS skip_rate,
  avg_prefill_ms,
  avg_prefill_ms * skipped / 1000 AS est_prefill_s_saved
FROM (
  SELECT
    index1 AS model,
    SUM(IF(${pdPrefill} = 'ran', ${SI}, 0)) AS ran,
    SUM(IF(${pdPrefill} = 'skipped', ${SI}, 0)) AS skipped,
    SUM(IF(${pdPrefill} = 'ran', ${SI} * ${pdPrefillMs}, 0)) / SUM(IF(${pdPrefill} = 'ran', ${SI}, 0)) AS avg_prefill_ms
  ${from(ctx, "pd_decision").replace("\n", "\n  ")}
  GROUP BY model
)
ORDER BY skipped DESC`,
  },
  {
    name: "prefill-skips-by-reason",
    title: "PD requests by model, prefill outcome and skip reason (fanout, short_prompt, prefill_busy); the ran row's mean prefill_ms prices the skipped rows",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${pdPrefill} AS prefill,
  ${blob("pd_decision", "skipReason")} AS reason,
  SUM(${SI}) AS requests,
  SUM(IF(${pdPrefill} = 'ran', ${SI} * ${pdPrefillMs}, 0)) / SUM(${SI}) AS avg_prefill_ms
${from(ctx, "pd_decision")}
GROUP BY model, prefill, reason
ORDER BY model, requests DESC`,
  },
  {
    name: "kv-transfer-failures",
    title: "NIXL handoffs expected but not returned by the prefill engine (decode recomputed), by model and prefill engine",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("kv_transfer_failure", "prefillEngine")} AS prefill_engine,
  SUM(${SI}) AS failures
${from(ctx, "kv_transfer_failure")}
GROUP BY model, prefill_engine
ORDER BY failures DESC`,
  },
  {
    name: "engine-errors",
    title: "Engine outcomes and error rates by model, engine and leg (failure = retryable status, as the breaker counts)",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("engine_outcome", "engine")} AS engine,
  ${blob("engine_outcome", "leg")} AS leg,
  SUM(${SI}) AS outcomes,
  ${share(`${blob("engine_outcome", "breaker_outcome")} = 'failure'`)} AS failure_rate,
  ${share(`${double("engine_outcome", "status")} != 200`)} AS non_200_rate
${from(ctx, "engine_outcome")}
GROUP BY model, engine, leg
ORDER BY failure_rate DESC, outcomes DESC`,
  },
  {
    name: "breaker-transitions",
    title: "Circuit-breaker transitions by model, engine and from/to state",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("breaker_transition", "engine")} AS engine,
  ${blob("breaker_transition", "from")} AS from_state,
  ${blob("breaker_transition", "to")} AS to_state,
  SUM(${SI}) AS transitions,
  MAX(timestamp) AS last_at
${from(ctx, "breaker_transition")}
GROUP BY model, engine, from_state, to_state
ORDER BY last_at DESC`,
  },
  {
    name: "engine-selection",
    title: "Engine picks by model, leg, engine and policy",
    sql: (ctx) => `SELECT
  index1 AS model,
  ${blob("engine_selection", "leg")} AS leg,
  ${blob("engine_selection", "engine")} AS engine,
  ${blob("engine_selection", "policy")} AS policy,
  SUM(${SI}) AS picks
${from(ctx, "engine_selection")}
GROUP BY model, leg, engine, policy
ORDER BY model, leg, picks DESC`,
  },
];

export function findQuery(name: string): MetricsQuery | undefined {
  return QUERIES.find((q) => q.name === name);
}

/** The exact text sent to the SQL API: the query and an explicit JSON format. */
export function renderQuery(q: MetricsQuery, ctx: QueryContext): string {
  return `${q.sql(ctx)}\nFORMAT JSON`;
}
