// Two full `npm run bench` results side by side, target by target (the verdict table of each),
// as a markdown table on stdout: for a before/after that changes the runtime or the machine's
// software rather than one code path (report-compare.ts is the per-phase one).
//   tsx bench/compare-verdicts.ts <before.json> <after.json>
import { readFile } from "node:fs/promises";
import type { BenchResult } from "./report.js";
import { verdicts } from "./verdicts.js";

const mark = (met: boolean | undefined) => (met === undefined ? "not measured" : met ? "met" : "**missed**");
const load = async (path: string) => JSON.parse(await readFile(path, "utf8")) as BenchResult;
const runtime = (r: BenchResult) => `node ${r.versions.node}, wrangler ${r.versions.wrangler}, workerd ${r.versions.workerd}, commit ${r.versions.gitCommit}`;

async function main(): Promise<void> {
  const [beforePath, afterPath] = process.argv.slice(2);
  if (!beforePath || !afterPath) throw new Error("usage: tsx bench/compare-verdicts.ts <before.json> <after.json>");
  const [before, after] = [await load(beforePath), await load(afterPath)];
  const old = new Map(verdicts(before).map((v) => [`${v.id}|${v.figure}`, v]));
  const rows = verdicts(after).map((v) => {
    const b = old.get(`${v.id}|${v.figure}`);
    return `| ${v.target} | ${v.figure} | ${b ? `${b.value} (${mark(b.met)})` : "not measured"} | ${v.value} (${mark(v.met)}) |`;
  });
  console.log(`Before: \`${before.command}\` on ${before.date.slice(0, 10)} (${runtime(before)}).`);
  console.log(`After: \`${after.command}\` on ${after.date.slice(0, 10)} (${runtime(after)}).\n`);
  console.log("| target | figure | before | after |\n|---|---|---|---|");
  for (const r of rows) console.log(r);
}

await main();
