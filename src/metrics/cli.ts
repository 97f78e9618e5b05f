// `npm run metrics -- <query> [--since 1h]`: runs one catalogue query (queries.ts) against
// the Analytics Engine SQL API and prints a table. Everything the process touches (argv, env,
// fetch, output) is passed in, so tests drive it with a recorded response and no network.
import { DEFAULT_DATASET, findQuery, parseSince, QUERIES, QueryInputError, renderQuery, type Since } from "./queries.js";
import { runSql, SqlApiError } from "./sql-api.js";
import { formatTable } from "./table.js";

export interface CliIo {
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
  out(line: string): void;
  err(line: string): void;
}

const USAGE = `usage: npm run metrics -- <query> [--since 1h] [--dataset ${DEFAULT_DATASET}] [--sql] [--json]
  --since    window: a whole number and m, h or d (default 1h, at most 92d)
  --dataset  Analytics Engine dataset (wrangler.toml [[analytics_engine_datasets]] dataset)
  --sql      print the SQL instead of running it (needs no credentials)
  --json     print the API's JSON instead of a table
env: CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN (a token with Account Analytics: Read)`;

interface Args {
  query?: string;
  since: string;
  dataset: string;
  sqlOnly: boolean;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { since: "1h", dataset: DEFAULT_DATASET, sqlOnly: false, json: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new QueryInputError(`${flag}: needs a value`);
      return v;
    };
    if (flag === "--since") a.since = value();
    else if (flag === "--dataset") a.dataset = value();
    else if (flag === "--sql") a.sqlOnly = true;
    else if (flag === "--json") a.json = true;
    else if (flag.startsWith("-")) throw new QueryInputError(`unknown option ${flag}`);
    else if (a.query === undefined) a.query = arg;
    else throw new QueryInputError(`one query at a time (got '${a.query}' and '${arg}')`);
  }
  return a;
}

function listQueries(io: CliIo): void {
  const width = Math.max(...QUERIES.map((q) => q.name.length));
  io.out("queries (npm run metrics -- <query> [--since 1h]):");
  for (const q of QUERIES) io.out(`  ${q.name.padEnd(width)}  ${q.title}`);
}

/** Returns the exit code: 0 ok, 1 the API failed, 2 a usage error. */
export async function runMetricsCli(argv: string[], io: CliIo): Promise<number> {
  let args: Args;
  let since: Since;
  try {
    args = parseArgs(argv);
    since = parseSince(args.since);
  } catch (err) {
    if (!(err instanceof QueryInputError)) throw err;
    io.err(`metrics: ${err.message}\n${USAGE}`);
    return 2;
  }
  if (args.query === undefined) {
    listQueries(io);
    return 0;
  }
  const query = findQuery(args.query);
  if (!query) {
    io.err(`metrics: unknown query '${args.query}'; known: ${QUERIES.map((q) => q.name).join(", ")}`);
    return 2;
  }
  let sql: string;
  try {
    sql = renderQuery(query, { since, dataset: args.dataset });
  } catch (err) {
    if (!(err instanceof QueryInputError)) throw err;
    io.err(`metrics: ${err.message}`);
    return 2;
  }
  if (args.sqlOnly) {
    io.out(sql);
    return 0;
  }
  const accountId = io.env.CLOUDFLARE_ACCOUNT_ID?.trim();
  const token = io.env.CLOUDFLARE_API_TOKEN?.trim();
  const missing = [!accountId && "CLOUDFLARE_ACCOUNT_ID", !token && "CLOUDFLARE_API_TOKEN"].filter(Boolean);
  if (missing.length > 0) {
    io.err(`metrics: set ${missing.join(" and ")} in the environment (the account id from the dashboard; a token with Account Analytics: Read)`);
    return 2;
  }
  try {
    const result = await runSql({ accountId: accountId!, token: token!, sql, fetch: io.fetch });
    io.out(`${query.title} — last ${since.text}`);
    io.out(args.json ? JSON.stringify(result, null, 2) : formatTable(result));
    return 0;
  } catch (err) {
    if (!(err instanceof SqlApiError)) throw err;
    io.err(`metrics: ${err.message}`);
    return 1;
  }
}
