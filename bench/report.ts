// The result file (bench/results/latest.json) and the benchmark section of
// docs/benchmarks.md, regenerated from it. Other sections of that doc (e.g. the load test's,
// between its own markers) are kept as they are.
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import type { BundleInfo, StartupProfile } from "./build.js";
import type { Counts } from "./context.js";
import type { CpuCase } from "./cpu.js";
import type { FanoutResult } from "./fanout.js";
import type { MemoryFigures, StartupFigures } from "./footprint.js";
import type { OverheadResult } from "./overhead.js";
import type { MachineInfo } from "./proc.js";
import type { ProfileResult } from "./profiles.js";
import { renderBench } from "./report-md.js";
import type { ScalingCell } from "./scaling.js";
import { round } from "./stats.js";
import type { StreamFigures } from "./streaming.js";
import type { TokenizerFigures } from "./tokenizer.js";
import type { TokenCpuResult } from "./token-cpu.js";

export interface Versions {
  node: string;
  wrangler: string;
  workerd: string;
  workerdBinary: string;
  portkeyGateway: string;
  autocannon: string;
  gitCommit: string;
  gitDirty: boolean;
}

export interface BenchResult {
  schema: 1;
  profile: "quick" | "full";
  command: string;
  date: string;
  durationS: number;
  machine: MachineInfo;
  versions: Versions;
  counts: Counts;
  /** Cores busy with other work just before the measurements (whole machine, from /proc/stat). */
  background?: { busyCoresBefore: number; waitedS: number; loadAvg1: number };
  overhead?: OverheadResult | undefined;
  cpu?: CpuCase[] | undefined;
  streaming?: StreamFigures[] | undefined;
  /** CPU per streamed token with the tool and reasoning parsers vs without (issue 28). */
  parsers?: TokenCpuResult | undefined;
  /** CPU per streamed token of /v1/responses and /v1/messages vs chat (issue 29). */
  apis?: TokenCpuResult | undefined;
  fanout?: FanoutResult | undefined;
  scaling?: ScalingCell[] | undefined;
  footprint?: {
    bundle: Omit<BundleInfo, "dir"> & { dir?: undefined };
    passthroughBundle: Omit<BundleInfo, "dir"> & { dir?: undefined };
    /** The deployed `[env.production]` bundle (minified). */
    productionBundle?: (Omit<BundleInfo, "dir"> & { dir?: undefined }) | undefined;
    startup?: StartupFigures[] | undefined;
    isolateStartup?: StartupProfile | undefined;
    memory?: MemoryFigures[] | undefined;
  };
  profiles?: ProfileResult[] | undefined;
  tokenizer?: TokenizerFigures | undefined;
  errors: { phase: string; message: string }[];
  /** Said under the title, e.g. which phases come from an earlier run (bench/report-compare.ts). */
  note?: string;
}

const run = promisify(execFile);

/** The version of `name` as `from` resolves it (workerd sits under wrangler, not at the top). */
async function pkgVersion(name: string, from = "node_modules"): Promise<string> {
  try {
    const pkg = JSON.parse(await readFile(`${from}/${name}/package.json`, "utf8")) as { version: string };
    return pkg.version;
  } catch {
    return from === "node_modules" ? "not installed" : pkgVersion(name);
  }
}

async function cmd(file: string, args: string[]): Promise<string> {
  try {
    return (await run(file, args, { encoding: "utf8", timeout: 20_000 })).stdout.trim();
  } catch {
    return "unknown";
  }
}

export async function versions(): Promise<Versions> {
  const status = await cmd("git", ["status", "--porcelain"]);
  return {
    node: process.versions.node,
    wrangler: await pkgVersion("wrangler"),
    // The workerd that wrangler (and so `wrangler dev`) runs.
    workerd: await pkgVersion("workerd", "node_modules/wrangler/node_modules"),
    workerdBinary: await cmd("node_modules/wrangler/node_modules/@cloudflare/workerd-linux-64/bin/workerd", ["--version"]),
    portkeyGateway: await pkgVersion("@portkey-ai/gateway"),
    autocannon: await pkgVersion("autocannon"),
    gitCommit: await cmd("git", ["rev-parse", "--short", "HEAD"]),
    gitDirty: status !== "" && status !== "unknown",
  };
}

/** Rounds every number in the result for a readable, diff-friendly JSON file. */
function rounded(value: unknown): unknown {
  if (typeof value === "number") return round(value, 4);
  if (Array.isArray(value)) return value.map(rounded);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]));
  return value;
}

const START = "<!-- bench:start -->";
const END = "<!-- bench:end -->";

/** Puts `section` between the bench markers of `doc`, or after its title when they are missing. */
export function spliceSection(doc: string, section: string): string {
  const block = `${START}\n${section.trim()}\n${END}`;
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a >= 0 && b > a) return doc.slice(0, a) + block + doc.slice(b + END.length);
  if (doc.trim() === "") return `# Benchmarks\n\n${block}\n`;
  const title = /^# .*\n/.exec(doc);
  if (title) return `${title[0]}\n${block}\n\n${doc.slice(title[0].length).replace(/^\n+/, "")}`;
  return `${block}\n\n${doc}`;
}

export async function writeReport(result: BenchResult, jsonPath = "bench/results/latest.json", docPath = "docs/benchmarks.md"): Promise<string[]> {
  await mkdir("bench/results", { recursive: true });
  const clean = rounded(result) as BenchResult;
  await writeFile(jsonPath, `${JSON.stringify(clean, null, 2)}\n`);
  let doc = "";
  try {
    doc = await readFile(docPath, "utf8");
  } catch {
    // a new doc
  }
  await writeFile(docPath, spliceSection(doc, renderBench(clean)).replace(/\n*$/, "\n"));
  return [jsonPath, docPath];
}
