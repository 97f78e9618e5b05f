// The query catalogue: --since parsing, the SQL each query sends (weighted by
// _sample_interval, gated on flag blobs, positions taken from the layout), and that
// docs/metrics.md shows the same SQL and the same layout as the code.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_DATASET, findQuery, parseSince, QUERIES, QueryInputError, renderQuery } from "../../src/metrics/queries.js";
import { LAYOUTS } from "../../src/metrics/schema.js";

const ctx = { since: parseSince("1h"), dataset: DEFAULT_DATASET };
const sql = (name: string) => findQuery(name)!.sql(ctx);

describe("parseSince", () => {
  it.each([
    ["15m", "15", "MINUTE", 900],
    ["1h", "1", "HOUR", 3600],
    ["24h", "24", "HOUR", 86_400],
    ["7d", "7", "DAY", 604_800],
    ["92d", "92", "DAY", 92 * 86_400],
  ])("%s", (text, amount, unit, seconds) => {
    expect(parseSince(text)).toMatchObject({ amount: Number(amount), unit, seconds });
  });
  it.each(["", "1", "h", "0h", "1.5h", "-1h", "1w", "1 h", "93d", "10000000m"])("rejects %j", (text) => {
    expect(() => parseSince(text)).toThrow(QueryInputError);
  });
});

describe("the catalogue", () => {
  it("has the queries the docs promise", () => {
    expect(QUERIES.map((q) => q.name)).toEqual([
      "requests", "request-errors", "ttft", "tpot", "prefill-duration", "kv-transfer", "prefill-skips", "prefill-skips-by-reason",
      "kv-transfer-failures", "engine-errors", "breaker-transitions", "engine-selection",
    ]);
  });

  it.each(QUERIES.map((q) => [q.name, q] as const))("%s: v1 rows of one event type in the window, weighted by _sample_interval", (_n, q) => {
    const text = q.sql(ctx);
    expect(text).toMatch(/WHERE blob1 = 'v1' AND blob2 = '[a-z_]+' AND timestamp > NOW\(\) - INTERVAL '1' HOUR/);
    expect(text).toContain(`FROM ${DEFAULT_DATASET}`);
    expect(text).toContain("_sample_interval");
    expect(text).not.toMatch(/count\(\)|COUNT\(\)|avg\(|AVG\(|sumIf|countIf|JOIN|UNION/);
    expect(renderQuery(q, ctx)).toBe(`${text}\nFORMAT JSON`);
  });

  it("quantiles are quantileExactWeighted over the flag-gated double", () => {
    expect(sql("ttft")).toContain("quantileExactWeighted(0.95)(double1, _sample_interval) AS p95_ms");
    expect(sql("ttft")).toContain("blob5 = 'measured'");
    expect(sql("tpot")).toContain("quantileExactWeighted(0.99)(double2, _sample_interval) AS p99_ms");
    expect(sql("tpot")).toContain("blob6 = 'measured'");
    expect(sql("prefill-duration")).toContain("quantileExactWeighted(0.5)(double2, _sample_interval) AS p50_ms");
    expect(sql("prefill-duration")).toContain("blob5 = 'ran'");
    expect(sql("kv-transfer")).toContain("quantileExactWeighted(0.5)(double3, _sample_interval)");
    expect(sql("kv-transfer")).toContain("blob10 = 'measured'");
  });

  it("rates divide weighted sums; the window length comes from --since", () => {
    expect(sql("requests")).toContain("SUM(_sample_interval) / 3600 AS per_second");
    expect(findQuery("requests")!.sql({ ...ctx, since: parseSince("15m") })).toContain("SUM(_sample_interval) / 900 AS per_second");
    expect(findQuery("requests")!.sql({ ...ctx, since: parseSince("7d") })).toContain("INTERVAL '7' DAY");
    expect(sql("requests")).toContain("SUM(IF(double1 >= 400 AND double1 != 499, _sample_interval, 0)) / SUM(_sample_interval) AS error_rate");
  });

  it("prefill-skips: average prefill of ran requests x skipped requests", () => {
    const text = sql("prefill-skips");
    expect(text).toContain("SUM(IF(blob5 = 'ran', _sample_interval * double2, 0)) / SUM(IF(blob5 = 'ran', _sample_interval, 0)) AS avg_prefill_ms");
    expect(text).toContain("avg_prefill_ms * skipped / 1000 AS est_prefill_s_saved");
  });

  it("engine-errors counts failures as the breaker does", () => {
    expect(sql("engine-errors")).toContain("SUM(IF(blob5 = 'failure', _sample_interval, 0)) / SUM(_sample_interval) AS failure_rate");
  });

  it("rejects a dataset that is not a plain identifier", () => {
    expect(() => findQuery("requests")!.sql({ ...ctx, dataset: "x; DROP" })).toThrow(QueryInputError);
  });
});

describe("docs/metrics.md agrees with the code", () => {
  const doc = readFileSync(new URL("../../docs/metrics.md", import.meta.url), "utf8");

  it.each(QUERIES.map((q) => [q.name, q] as const))("shows the SQL of %s for --since 1h", (name, q) => {
    expect(doc).toContain(`npm run metrics -- ${name}`);
    expect(doc).toContain("```sql\n" + q.sql(ctx) + "\n```");
  });

  it.each(Object.keys(LAYOUTS))("documents the %s layout position by position", (type) => {
    expect(doc).toContain(layoutRow(type));
  });
});

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The docs' layout table row for one event type. */
function layoutRow(type: string): string {
  const layout = (LAYOUTS as unknown as Record<string, { blobs: (string | { flag: string })[]; doubles: string[] }>)[type]!;
  const blobs = layout.blobs.map((b, i) => `blob${i + 3} ${typeof b === "string" ? `\`${snake(b)}\`` : `\`${b.flag}\` (flag)`}`);
  const doubles = layout.doubles.map((d, i) => `double${i + 1} \`${snake(d)}\``);
  return `| \`${type}\` | ${blobs.join(", ")} | ${doubles.join(", ") || "-"} |`;
}
