// `npm run metrics`: the request it sends to the SQL API, the parsing and printing of a
// recorded response, and a clear error for each way it can go wrong. fetch is injected:
// no network here.
import { describe, expect, it } from "vitest";
import { runMetricsCli, type CliIo } from "../../src/metrics/cli.js";
import { findQuery, parseSince, renderQuery } from "../../src/metrics/queries.js";
import { parseSqlResponse, SqlApiError } from "../../src/metrics/sql-api.js";
import { formatTable } from "../../src/metrics/table.js";

const ACCOUNT = "0123456789abcdef0123456789abcdef";

// The shape the SQL API answers with FORMAT JSON (Cloudflare docs, SQL reference: FORMAT
// clause): meta, data, rows. 64-bit integers come quoted, as ClickHouse's JSON output does.
const RECORDED_TTFT = JSON.stringify({
  meta: [
    { name: "model", type: "String" },
    { name: "surface", type: "String" },
    { name: "streams", type: "UInt64" },
    { name: "p50_ms", type: "Float64" },
    { name: "p95_ms", type: "Float64" },
    { name: "p99_ms", type: "Float64" },
  ],
  data: [
    { model: "sim-model", surface: "engine", streams: "1200", p50_ms: 41.25, p95_ms: 97.5, p99_ms: 180 },
    { model: "sim-model-http", surface: "openai", streams: "35", p50_ms: 55.125, p95_ms: 120.75, p99_ms: 133.5 },
  ],
  rows: 2,
  rows_before_limit_at_least: 2,
});

interface Harness {
  io: CliIo;
  out: string[];
  err: string[];
  calls: { url: string; init: RequestInit }[];
}

function harness(respond: () => Response | Promise<Response> = () => new Response(RECORDED_TTFT), env: Record<string, string | undefined> = { CLOUDFLARE_ACCOUNT_ID: ACCOUNT, CLOUDFLARE_API_TOKEN: "tok" }): Harness {
  const h: Harness = { out: [], err: [], calls: [], io: undefined as never };
  h.io = {
    env,
    fetch: (async (url: string, init: RequestInit) => {
      h.calls.push({ url: String(url), init });
      return respond();
    }) as typeof fetch,
    out: (l) => h.out.push(l),
    err: (l) => h.err.push(l),
  };
  return h;
}

describe("running a query", () => {
  it("POSTs the query's SQL with a bearer token to the account's analytics_engine/sql endpoint", async () => {
    const h = harness();
    expect(await runMetricsCli(["ttft", "--since", "6h"], h.io)).toBe(0);
    expect(h.calls).toHaveLength(1);
    const [call] = h.calls;
    expect(call!.url).toBe(`https://api.cloudflare.com/client/v4/accounts/${ACCOUNT}/analytics_engine/sql`);
    expect(call!.init.method).toBe("POST");
    expect((call!.init.headers as Record<string, string>).authorization).toBe("Bearer tok");
    expect(call!.init.body).toBe(renderQuery(findQuery("ttft")!, { since: parseSince("6h"), dataset: "vllm_edge_gateway" }));
    expect(call!.init.body).toContain("INTERVAL '6' HOUR");
    expect(String(call!.init.body).endsWith("FORMAT JSON")).toBe(true);
  });

  it("prints the recorded response as a table", async () => {
    const h = harness();
    await runMetricsCli(["ttft"], h.io);
    const text = h.out.join("\n");
    expect(text).toContain("last 1h");
    const lines = text.split("\n").slice(1);
    expect(lines[0]).toMatch(/^model\s+surface\s+streams\s+p50_ms\s+p95_ms\s+p99_ms$/);
    expect(lines[2]).toMatch(/^sim-model\s+engine\s+1200\s+41\.25\s+97\.50\s+180$/);
    expect(lines[3]).toMatch(/^sim-model-http\s+openai\s+35\s+55\.13\s+120\.75\s+133\.50$/);
    expect(lines.at(-1)).toBe("(2 rows)");
  });

  it("--json prints the parsed result; --dataset and --since=value are honoured", async () => {
    const h = harness();
    expect(await runMetricsCli(["requests", "--json", "--dataset", "other_ds", "--since=30m"], h.io)).toBe(0);
    expect(h.calls[0]!.init.body).toContain("FROM other_ds");
    expect(h.calls[0]!.init.body).toContain("INTERVAL '30' MINUTE");
    expect(JSON.parse(h.out.slice(1).join("\n"))).toMatchObject({ rows: 2, data: [{ model: "sim-model" }, { model: "sim-model-http" }] });
  });

  it("--sql prints the SQL and needs no credentials", async () => {
    const h = harness(undefined, {});
    expect(await runMetricsCli(["prefill-skips", "--sql"], h.io)).toBe(0);
    expect(h.calls).toHaveLength(0);
    expect(h.out.join("\n")).toContain("est_prefill_s_saved");
  });

  it("no arguments lists the queries", async () => {
    const h = harness(undefined, {});
    expect(await runMetricsCli([], h.io)).toBe(0);
    expect(h.out.join("\n")).toMatch(/prefill-skips\s+Prefill skip rate/);
    expect(h.calls).toHaveLength(0);
  });
});

describe("clear errors", () => {
  it("missing env vars are named", async () => {
    const h = harness(undefined, { CLOUDFLARE_API_TOKEN: "tok" });
    expect(await runMetricsCli(["ttft"], h.io)).toBe(2);
    expect(h.err.join("\n")).toMatch(/set CLOUDFLARE_ACCOUNT_ID in the environment/);
    const both = harness(undefined, { CLOUDFLARE_ACCOUNT_ID: " " });
    expect(await runMetricsCli(["ttft"], both.io)).toBe(2);
    expect(both.err.join("\n")).toMatch(/set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN/);
    expect(h.calls.length + both.calls.length).toBe(0);
  });

  it("an unknown query lists the known ones", async () => {
    const h = harness();
    expect(await runMetricsCli(["p99"], h.io)).toBe(2);
    expect(h.err.join("\n")).toMatch(/unknown query 'p99'; known: requests, request-errors, ttft/);
  });

  it.each([["--since", "2w"], ["--since", "0h"], ["--since"], ["--bogus"]])("a bad option %j", async (...args) => {
    const h = harness();
    expect(await runMetricsCli(["ttft", ...args], h.io)).toBe(2);
    expect(h.err[0]).toMatch(/^metrics: (--since|unknown option)/);
    expect(h.calls).toHaveLength(0);
  });

  it("an HTTP error carries the status and the API's message", async () => {
    const h = harness(() => new Response(JSON.stringify({ success: false, errors: [{ code: 10000, message: "Authentication error" }] }), { status: 403 }));
    expect(await runMetricsCli(["ttft"], h.io)).toBe(1);
    expect(h.err[0]).toBe(
      "metrics: Analytics Engine SQL API answered HTTP 403 (check CLOUDFLARE_API_TOKEN: it needs the Account Analytics Read permission on CLOUDFLARE_ACCOUNT_ID): Authentication error (code 10000)",
    );
  });

  it("a plain-text HTTP error (bad SQL) is shown as sent", async () => {
    const h = harness(() => new Response("cannot parse query: unknown column blob99", { status: 422 }));
    expect(await runMetricsCli(["ttft"], h.io)).toBe(1);
    expect(h.err[0]).toBe("metrics: Analytics Engine SQL API answered HTTP 422: cannot parse query: unknown column blob99");
  });

  it("a network failure is reported, not thrown", async () => {
    const h = harness(() => Promise.reject(new TypeError("fetch failed")));
    expect(await runMetricsCli(["ttft"], h.io)).toBe(1);
    expect(h.err[0]).toMatch(/could not reach the Analytics Engine SQL API: fetch failed/);
  });

  it("a 200 that is not the JSON shape is an error", async () => {
    const h = harness(() => new Response("<html>maintenance</html>"));
    expect(await runMetricsCli(["ttft"], h.io)).toBe(1);
    expect(h.err[0]).toMatch(/something other than JSON/);
  });
});

describe("response parsing and printing", () => {
  it("keeps meta order and rows; tolerates extra keys", () => {
    const r = parseSqlResponse(RECORDED_TTFT);
    expect(r.meta.map((c) => c.name)).toEqual(["model", "surface", "streams", "p50_ms", "p95_ms", "p99_ms"]);
    expect(r.rows).toBe(2);
    expect(r.data[0]).toMatchObject({ streams: "1200" });
  });
  it("rejects JSON without meta/data", () => {
    expect(() => parseSqlResponse('{"rows":1}')).toThrow(SqlApiError);
  });
  it("prints an empty result and nulls", () => {
    expect(formatTable({ meta: [{ name: "a", type: "String" }], data: [], rows: 0 })).toBe("(no rows)  columns: a");
    expect(formatTable({ meta: [{ name: "a", type: "Float64" }], data: [{ a: null }, { a: 0.12345 }], rows: 2 })).toBe("a\n------\n-\n0.1235\n(2 rows)");
  });
});
