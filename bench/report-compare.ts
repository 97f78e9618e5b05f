// Before/after of the OpenAI HTTP path (issue 17) from two partial runs of the same phases
// (`npm run bench -- --only overhead,cpu,streaming,startup,profiles`), side by side against the
// issue's targets, spliced into docs/benchmarks.md between its own markers; the after run's
// phases also replace those of bench/results/latest.json, and the main section is re-rendered
// from it (phases the after run did not measure keep their earlier figures, and say so).
//   tsx bench/report-compare.ts <before.json> <after.json> [--before-load "..."] [--after-load "..."]
import { readFile, writeFile } from "node:fs/promises";
import type { BenchResult } from "./report.js";
import { writeReport } from "./report.js";
import type { ProfileResult } from "./profiles.js";
import { cpuOf, profileOf } from "./verdicts.js";

const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(d));
const table = (head: string[], rows: (string | number)[][]) =>
  [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
const mark = (met: boolean | undefined) => (met === undefined ? "not measured" : met ? "met" : "**missed**");

interface Figures {
  cpuRatio?: number;
  cpuMs?: number;
  ptCpuMs?: number;
  chunkUs?: number;
  ptChunkUs?: number;
  chunkRatio?: number;
  vsPt?: number;
  vsPk?: number;
  addedP50?: number;
  ptAddedP50?: number;
  gzipKiB?: number;
  startupMs?: number;
  nativeChunkUs?: number;
  nativeChunkRatio?: number;
  frameUs?: number;
  ptFrameUs?: number;
  frameRatio?: number;
}

function figures(r: BenchResult): Figures {
  const gw = cpuOf(r, "non-streamed", "gateway");
  const pt = cpuOf(r, "non-streamed", "passthrough");
  const gs = cpuOf(r, "256-token SSE", "gateway");
  const ps = cpuOf(r, "256-token SSE", "passthrough");
  const o = r.overhead;
  const per = (c: typeof gs) => (c?.chunksPerRequest ? (1000 * c.cpuMsPerRequest) / c.chunksPerRequest : undefined);
  const out: Figures = {};
  const set = <K extends keyof Figures>(k: K, v: Figures[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set("cpuMs", gw?.cpuMsPerRequest);
  set("ptCpuMs", pt?.cpuMsPerRequest);
  set("cpuRatio", gw && pt ? gw.cpuMsPerRequest / pt.cpuMsPerRequest : undefined);
  set("chunkUs", per(gs));
  set("ptChunkUs", per(ps));
  const a = per(gs);
  const b = per(ps);
  set("chunkRatio", a !== undefined && b !== undefined ? a / b : undefined);
  set("vsPt", o?.ratios.gatewayVsPassthroughThroughput);
  set("vsPk", o?.ratios.gatewayVsPortkeyThroughput);
  set("addedP50", o?.targets.find((t) => t.target === "gateway")?.addedP50Ms);
  set("ptAddedP50", o?.targets.find((t) => t.target === "passthrough")?.addedP50Ms);
  const native = r.cpu?.find((c) => c.case === "256-token SSE stream, sse_relay native" && c.target === "gateway");
  const n = per(native);
  set("nativeChunkUs", n);
  set("nativeChunkRatio", n !== undefined && b !== undefined ? n / b : undefined);
  const gc = cpuOf(r, "256-token Connect", "gateway");
  const pc = cpuOf(r, "256-token Connect", "passthrough");
  set("frameUs", per(gc));
  set("ptFrameUs", per(pc));
  const fa = per(gc);
  const fb = per(pc);
  set("frameRatio", fa !== undefined && fb !== undefined ? fa / fb : undefined);
  set("gzipKiB", r.footprint ? r.footprint.bundle.gzipBytes / 1024 : undefined);
  set("startupMs", r.footprint?.isolateStartup?.cpuMs);
  return out;
}

function targetRows(b: Figures, a: Figures): (string | number)[][] {
  const row = (target: string, figure: string, bv: string, av: string, met: boolean | undefined) => [target, figure, bv, av, mark(met)];
  const lat = (x: Figures) => (x.addedP50 !== undefined && x.ptAddedP50 !== undefined ? x.addedP50 - x.ptAddedP50 : undefined);
  return [
    row("CPU per non-streamed completion <= 1.15x pass-through", "gateway / pass-through workerd CPU per request", `${f(b.cpuRatio)}x (${f(b.cpuMs, 3)} / ${f(b.ptCpuMs, 3)} ms)`, `${f(a.cpuRatio)}x (${f(a.cpuMs, 3)} / ${f(a.ptCpuMs, 3)} ms)`, a.cpuRatio === undefined ? undefined : a.cpuRatio <= 1.15),
    row("CPU per SSE chunk <= 1.5x pass-through", "256-token stream, CPU per chunk", `${f(b.chunkRatio)}x (${f(b.chunkUs, 1)} / ${f(b.ptChunkUs, 1)} µs)`, `${f(a.chunkRatio)}x (${f(a.chunkUs, 1)} / ${f(a.ptChunkUs, 1)} µs)`, a.chunkRatio === undefined ? undefined : a.chunkRatio <= 1.5),
    row("CPU per SSE chunk <= 1.5x pass-through, sse_relay native", "256-token stream, CPU per chunk (the model's engine body handed on untouched)", b.nativeChunkRatio === undefined ? "n/a" : `${f(b.nativeChunkRatio)}x`, a.nativeChunkRatio === undefined ? "n/a" : `${f(a.nativeChunkRatio)}x (${f(a.nativeChunkUs, 1)} / ${f(a.ptChunkUs, 1)} µs)`, a.nativeChunkRatio === undefined ? undefined : a.nativeChunkRatio <= 1.5),
    row("CPU per Connect frame <= 2x pass-through", "256-token Connect stream, CPU per frame", `${f(b.frameRatio)}x (${f(b.frameUs, 1)} / ${f(b.ptFrameUs, 1)} µs)`, `${f(a.frameRatio)}x (${f(a.frameUs, 1)} / ${f(a.ptFrameUs, 1)} µs)`, a.frameRatio === undefined ? undefined : a.frameRatio <= 2),
    row("throughput at c=32 >= 0.90x pass-through", "gateway / pass-through req/s", f(b.vsPt), f(a.vsPt), a.vsPt === undefined ? undefined : a.vsPt >= 0.9),
    row("throughput at c=32 >= 2x Portkey", "gateway / Portkey req/s", f(b.vsPk), f(a.vsPk), a.vsPk === undefined ? undefined : a.vsPk >= 2),
    row("added p50 <= pass-through + 0.2 ms", "gateway added p50 - pass-through added p50, c=1", `${f(lat(b))} ms`, `${f(lat(a))} ms`, lat(a) === undefined ? undefined : lat(a)! <= 0.2),
    row("bundle <= 200 KiB gzip", "gzip -9 of the dry-run bundle", `${f(b.gzipKiB, 1)} KiB`, `${f(a.gzipKiB, 1)} KiB`, a.gzipKiB === undefined ? undefined : a.gzipKiB <= 200),
    row("isolate start-up CPU <= 20 ms", "`wrangler check startup`, sampled CPU", `${f(b.startupMs, 1)} ms`, `${f(a.startupMs, 1)} ms`, a.startupMs === undefined ? undefined : a.startupMs <= 20),
  ];
}

function topOf(p: ProfileResult | undefined, k: number): string {
  if (!p) return "(no profile)";
  return p.summary.topFunctions.slice(0, k).map((t) => `\`${t.name}\` (${t.module}) ${t.pct.toFixed(1)}%`).join(", ");
}
function modsOf(p: ProfileResult | undefined, k: number): string {
  if (!p) return "(no profile)";
  return p.summary.byModule.slice(0, k).map((m) => `${m.module} ${m.pct.toFixed(1)}%`).join(", ");
}

export function renderCompare(before: BenchResult, after: BenchResult, loads: { before?: string; after?: string }): string {
  const b = figures(before);
  const a = figures(after);
  const cpuRows = (after.cpu ?? []).map((c) => {
    const old = before.cpu?.find((x) => x.case === c.case && x.target === c.target);
    const chunk = (x: typeof c | undefined) => (x?.chunksPerRequest ? f((1000 * x.cpuMsPerRequest) / x.chunksPerRequest, 1) : "-");
    return [c.case, c.target, f(old?.cpuMsPerRequest, 3), f(c.cpuMsPerRequest, 3), chunk(old), chunk(c)];
  });
  const ohRows = (after.overhead?.targets ?? []).map((t) => {
    const old = before.overhead?.targets.find((x) => x.target === t.target);
    return [t.target, f(old?.p50Ms), f(t.p50Ms), t.target === "direct" ? "-" : f(old?.addedP50Ms), t.target === "direct" ? "-" : f(t.addedP50Ms), f(old?.requestsPerSec, 0), f(t.requestsPerSec, 0)];
  });
  const stRows = (after.streaming ?? []).filter((s) => s.target !== "direct").map((s) => {
    const old = before.streaming?.find((x) => x.surface === s.surface && x.paced === s.paced && x.target === s.target);
    return [s.surface, s.paced ? "paced" : "unpaced", s.target, f(old?.addedTtfbMs), f(s.addedTtfbMs), f(old?.addedPerChunkMs, 4), f(s.addedPerChunkMs, 4)];
  });
  const gwNs = profileOf(after, "gateway", "non-streamed");
  const gwSse = profileOf(after, "gateway", "256-token SSE");
  const ptNs = profileOf(after, "passthrough", "non-streamed");
  const st = after.footprint?.isolateStartup?.summary;
  const stBefore = before.footprint?.isolateStartup?.summary;
  const bg = (r: BenchResult, load?: string) =>
    `${r.background ? `${f(r.background.busyCoresBefore)} cores busy with other work before measuring, load average ${f(r.background.loadAvg1)}` : "background not recorded"}${load ? `; \`uptime\` ${load}` : ""}`;
  return [
    "## Issue 17: the OpenAI HTTP path, before and after",
    "",
    `Both runs: \`npm run bench -- --only overhead,cpu,streaming,startup,profiles\` on the same machine (${after.machine.nproc} cores, ${after.machine.cpuModel}), quick profile, ${after.counts.repeats} repeats. ` +
      `Before: commit ${before.versions.gitCommit} (${before.date}), ${bg(before, loads.before)}. After: commit ${after.versions.gitCommit} (${after.date}), ${bg(after, loads.after)}. ` +
      "The machine is shared with other sessions' test runs: single figures move by 20-40% between runs, so read the ratios (gateway against pass-through in the same run) rather than absolute times. Generated by `tsx bench/report-compare.ts <before.json> <after.json>`.",
    "",
    table(["target", "figure", "before", "after", "after: target"], targetRows(b, a)),
    "",
    "CPU per request (workerd utime+stime / requests; see section 2):",
    "",
    table(["case", "target", "before ms/request", "after ms/request", "before µs/chunk", "after µs/chunk"], cpuRows),
    "",
    "Latency and throughput (section 1):",
    "",
    table(["target", "before p50 ms", "after p50 ms", "before added p50 ms", "after added p50 ms", "before req/s c=32", "after req/s c=32"], ohRows),
    "",
    "Streaming relay, added over direct (section 3):",
    "",
    table(["surface", "pacing", "target", "before added TTFB ms", "after added TTFB ms", "before added ms/chunk", "after added ms/chunk"], stRows),
    "",
    `Isolate start-up (\`wrangler check startup\`): before ${f(before.footprint?.isolateStartup?.cpuMs, 1)} ms (${stBefore ? stBefore.byModule.slice(0, 4).map((m) => `${m.module} ${f(m.selfMs, 1)} ms`).join(", ") : "n/a"}); ` +
      `after ${f(after.footprint?.isolateStartup?.cpuMs, 1)} ms (${st ? st.byModule.slice(0, 4).map((m) => `${m.module} ${f(m.selfMs, 1)} ms`).join(", ") : "n/a"}). ` +
      `Bundle: before ${f(b.gzipKiB, 1)} KiB gzip, after ${f(a.gzipKiB, 1)} KiB gzip (${f(after.footprint ? after.footprint.bundle.rawBytes / 1024 : undefined, 0)} KiB raw).`,
    "",
    "### Where the time goes now",
    "",
    `Non-streamed completion, gateway (after): ${modsOf(gwNs, 7)}; top functions ${topOf(gwNs, 8)}. ` +
      `The pass-through's: ${modsOf(ptNs, 4)}. ` +
      `256-token SSE stream, gateway (after): ${modsOf(gwSse, 6)}; top functions ${topOf(gwSse, 8)}.`,
  ].join("\n");
}

const START = "<!-- bench-issue17:start -->";
const END = "<!-- bench-issue17:end -->";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const loads: { before?: string; after?: string } = {};
  const bl = opt("--before-load");
  const al = opt("--after-load");
  if (bl !== undefined) loads.before = bl;
  if (al !== undefined) loads.after = al;
  const [beforePath, afterPath] = args;
  if (!beforePath || !afterPath) throw new Error("usage: tsx bench/report-compare.ts <before.json> <after.json> [--before-load s] [--after-load s]");
  const before = JSON.parse(await readFile(beforePath, "utf8")) as BenchResult;
  const after = JSON.parse(await readFile(afterPath, "utf8")) as BenchResult;

  // The main section: the after run's phases over the recorded full run.
  const base = JSON.parse(await readFile("bench/results/latest.json", "utf8")) as BenchResult;
  const merged: BenchResult = {
    ...base,
    command: after.command.replace("npm run bench --only", "npm run bench -- --only"),
    note:
      `Merged: overhead, CPU, streaming, profiles, bundle and start-up are from \`${after.command.replace("npm run bench --only", "npm run bench -- --only")}\` (${after.date}, commit ${after.versions.gitCommit}); ` +
      `fan-out, scaling and memory (sections 4 and 6, and the memory table of section 5) are still those of \`${base.command}\` (${base.date}, commit ${base.versions.gitCommit}).`,
    date: after.date,
    durationS: after.durationS,
    machine: after.machine,
    versions: after.versions,
    ...(after.background ? { background: after.background } : {}),
    overhead: after.overhead ?? base.overhead,
    cpu: after.cpu ?? base.cpu,
    streaming: after.streaming ?? base.streaming,
    profiles: after.profiles ?? base.profiles,
    footprint: {
      ...base.footprint!,
      ...(after.footprint ? { bundle: after.footprint.bundle, passthroughBundle: after.footprint.passthroughBundle } : {}),
      ...(after.footprint?.startup ? { startup: after.footprint.startup } : {}),
      ...(after.footprint?.isolateStartup ? { isolateStartup: after.footprint.isolateStartup } : {}),
    },
    errors: after.errors,
  };
  await writeReport(merged);
  const doc = await readFile("docs/benchmarks.md", "utf8");
  const block = `${START}\n${renderCompare(before, after, loads).trim()}\n${END}`;
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  const out = a >= 0 && b > a ? doc.slice(0, a) + block + doc.slice(b + END.length) : doc.replace("<!-- bench:end -->", `<!-- bench:end -->\n\n${block}`);
  await writeFile("docs/benchmarks.md", out);
  console.log("wrote bench/results/latest.json and docs/benchmarks.md");
}

if (process.argv[1]?.endsWith("report-compare.ts")) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
