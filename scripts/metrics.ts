// `npm run metrics -- <query> [--since 1h]`: the catalogue in src/metrics/queries.ts against
// the Analytics Engine SQL API (CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN). With no
// arguments it lists the queries. The logic lives in src/metrics/cli.ts, where it is tested.
import { runMetricsCli } from "../src/metrics/cli.js";

process.exitCode = await runMetricsCli(process.argv.slice(2), {
  env: process.env,
  fetch: globalThis.fetch,
  out: (line) => console.log(line),
  err: (line) => console.error(line),
});
