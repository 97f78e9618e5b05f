// A client for the Analytics Engine SQL API: POST the SQL as the body to
// https://api.cloudflare.com/client/v4/accounts/{account_id}/analytics_engine/sql with a
// bearer token (Account Analytics: Read); with FORMAT JSON it answers
// { meta: [{name, type}], data: [{column: value}], rows }. fetch is injected so tests replay
// a recorded response and never touch the network.

export interface SqlColumn {
  name: string;
  type: string;
}

export interface SqlResult {
  meta: SqlColumn[];
  data: Record<string, unknown>[];
  rows: number;
}

export class SqlApiError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export function sqlApiUrl(accountId: string): string {
  return `https://api.cloudflare.com/client/v4/accounts/${encodeURIComponent(accountId)}/analytics_engine/sql`;
}

export interface RunSqlInput {
  accountId: string;
  token: string;
  sql: string;
  fetch: typeof fetch;
}

export async function runSql(input: RunSqlInput): Promise<SqlResult> {
  let res: Response;
  try {
    res = await input.fetch(sqlApiUrl(input.accountId), {
      method: "POST",
      headers: { authorization: `Bearer ${input.token}`, "content-type": "text/plain; charset=utf-8" },
      body: input.sql,
    });
  } catch (err) {
    throw new SqlApiError(`could not reach the Analytics Engine SQL API: ${(err as Error).message ?? String(err)}`);
  }
  const text = await res.text();
  if (!res.ok) throw new SqlApiError(httpErrorMessage(res.status, text), res.status);
  return parseSqlResponse(text);
}

/** The API's error text: Cloudflare's {errors: [{message}]} envelope, else the body itself. */
function httpErrorMessage(status: number, body: string): string {
  let detail = body.trim();
  try {
    const json = JSON.parse(body) as { errors?: { message?: string; code?: number }[] };
    const messages = (json.errors ?? []).map((e) => (e.code ? `${e.message} (code ${e.code})` : e.message)).filter(Boolean);
    if (messages.length > 0) detail = messages.join("; ");
  } catch {
    // not JSON: keep the text
  }
  if (detail.length > 500) detail = `${detail.slice(0, 500)}...`;
  const hint =
    status === 401 || status === 403
      ? " (check CLOUDFLARE_API_TOKEN: it needs the Account Analytics Read permission on CLOUDFLARE_ACCOUNT_ID)"
      : "";
  return `Analytics Engine SQL API answered HTTP ${status}${hint}${detail ? `: ${detail}` : ""}`;
}

export function parseSqlResponse(text: string): SqlResult {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SqlApiError(`Analytics Engine SQL API answered with something other than JSON: ${text.slice(0, 200)}`);
  }
  const r = json as Partial<SqlResult>;
  const okMeta = Array.isArray(r.meta) && r.meta.every((c) => typeof c?.name === "string");
  if (!okMeta || !Array.isArray(r.data)) {
    throw new SqlApiError(`Analytics Engine SQL API answered JSON without meta/data: ${text.slice(0, 200)}`);
  }
  const meta = r.meta!.map((c) => ({ name: c.name, type: String(c.type ?? "") }));
  return { meta, data: r.data as Record<string, unknown>[], rows: typeof r.rows === "number" ? r.rows : r.data.length };
}
