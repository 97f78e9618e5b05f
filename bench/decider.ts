// The "decider" phase of `npm run bench` (issue 18; `npm run bench -- --only decider`): when
// does the prefill leg pay? Under the sim's default latency model (0.05 ms per prompt token,
// 2 ms per output token, 2 ms pull setup + 0.01 ms per block), TTFT of n=1 streamed
// completions against prompt length, PD (the prefill leg runs, NIXL handoff, decode pulls)
// against decode-only (`pd.decode_only_max_prompt_tokens` far above the prompt, so
// `x-pd-prefill: skipped; reason=short_prompt`: decode computes the prompt). The crossover is
// the shortest length from which PD's p50 TTFT stays below decode-only's. Then a mixed
// workload (a fixed seeded log-uniform draw over 64..8192 tokens) with the decider at the
// crossover and with always-PD: TTFT p50/p99 and the prefill engines' GPU work (prompt tokens
// computed). Prompts are token ids, so the gateway's token count is exact (no bytes/4 estimate).
// It runs its own sim process (a default-latency NIXL PD pair per model, since the sim checks
// the served model name) and its own gateway (the same frozen bundle, one model per
// threshold), stops both at the end, and writes
// bench/results/decider.json and the "The decider" section of docs/benchmarks.md.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterSpec } from "../sim/types.js";
import type { BenchContext } from "./context.js";
import { agentFor, getJson, post } from "./http.js";
import { machineBusyCores } from "./proc.js";
import { percentile, median, round, rotated } from "./stats.js";
import { startGateway, startSim, type SimProcess } from "./targets.js";

export const DECIDER_LENGTHS = [64, 128, 256, 512, 1024, 2048, 4096, 8192];
const MAX_TOKENS = 16;
const MIXED_REQUESTS = 60;
const MIXED_SEED = 18;
const ALWAYS_SKIP = 1_000_000;

type Mode = "pd" | "decode-only";

export interface DeciderPoint {
  promptTokens: number;
  mode: Mode;
  requests: number;
  ttftP50Ms: number;
  totalP50Ms: number;
  /** x-pd-prefill values seen (checks the mode did what it says). */
  pdPrefill: string[];
}

export interface MixedRun {
  config: string;
  threshold: number;
  requests: number;
  prefillRan: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  /** Prompt tokens computed by the prefill engine over the run, and by the decode engine. */
  prefillPromptTokens: number;
  decodePromptTokens: number;
  errors: number;
}

export interface DeciderResult {
  date: string;
  repetitions: number;
  machine: { cores: number; busyCoresBefore: number };
  latencyModel: string;
  points: DeciderPoint[];
  /** TTFT(PD) - TTFT(decode-only) p50 per length. */
  gapMs: { promptTokens: number; pdMinusDecodeOnlyMs: number }[];
  /** Shortest grid length from which PD's p50 TTFT is below decode-only's at every longer length; null: none in the grid. */
  crossover: number | null;
  mixed: { seed: number; lengths: number[]; runs: MixedRun[] };
}

/** mulberry32: a small seeded PRNG, so the workload is the same every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Log-uniform over 64..8192 (each doubling equally likely), seeded. */
export function mixedLengths(n: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Math.round(64 * 2 ** (r() * 7)));
}

let idSeq = 0;
/** A token-id prompt of exactly `n` tokens, unique per request (sim ids are 100..49999). */
function tokenPrompt(n: number): number[] {
  const base = (++idSeq * 7919) % 40_000;
  return Array.from({ length: n }, (_, i) => 100 + ((base + i * 31) % 49_900));
}

/** The engine pair (prefill, decode) that serves a gateway model: the sim checks the served
 *  model name and the gateway forwards the client's, so every model has its own pair. */
const pairOf = (model: string) => ({ prefill: `${model}-p`, decode: `${model}-d` });

export async function measureDecider(ctx: BenchContext, buildDir: string): Promise<DeciderResult> {
  const thresholds: Record<string, number> = { "dec-pd": 0, "dec-only": ALWAYS_SKIP };
  for (const l of DECIDER_LENGTHS) thresholds[`dec-t${l}`] = l;
  // Default latency model (no `latency` field), NIXL, one pair per model, in their own process.
  const spec: ClusterSpec = {
    recentRequests: 1,
    engines: Object.keys(thresholds).flatMap((model) => [
      { name: pairOf(model).prefill, role: "prefill" as const, kvConnector: "NixlConnector" as const, kvEngineId: pairOf(model).prefill, model },
      { name: pairOf(model).decode, role: "decode" as const, kvConnector: "NixlConnector" as const, kvEngineId: pairOf(model).decode, model },
    ]),
  };
  const tmp = await mkdtemp(join(tmpdir(), "vllm-edge-decider-"));
  const sim = await startSim(spec, tmp);
  const http = (name: string, prefill: boolean) => ({
    name: `${name}-http`, url: sim.url(name), transport: "openai-http", ...(prefill ? { kv_connector: "NixlConnector" } : {}),
  });
  const models = Object.fromEntries(Object.entries(thresholds).map(([model, t]) => [model, {
    prefill: [http(pairOf(model).prefill, true)],
    decode: [http(pairOf(model).decode, false)],
    ...(t > 0 ? { pd: { decode_only_max_prompt_tokens: t } } : {}),
  }]));
  const config = { auth: { data_plane: "open" }, models };
  ctx.log("decider: starting a sim PD pair per threshold and a gateway from the same bundle");
  const gw = await startGateway(buildDir, config, "decider-gateway");
  try {
    return await run(ctx, gw.target.base, sim);
  } finally {
    await gw.dev.stop();
    await sim.stop();
    await rm(tmp, { recursive: true, force: true });
  }
}

async function promptTokensComputed(url: string): Promise<number> {
  return (await getJson<{ promptTokensComputed: number }>(`${url}/sim/stats`)).promptTokensComputed;
}

async function one(base: string, model: string, tokens: number): Promise<{ ttft: number; total: number; header: string; ok: boolean }> {
  const ex = await post(`${base}/v1/completions`, JSON.stringify({ model, prompt: tokenPrompt(tokens), max_tokens: MAX_TOKENS, ignore_eos: true, stream: true }), {
    agent: agentFor("decider", 4), sse: true, keepBody: true, timeoutMs: 30_000,
  });
  const ok = ex.status === 200 && (ex.body ?? "").includes("data: [DONE]");
  return { ttft: ex.events?.[0] ?? ex.totalMs, total: ex.totalMs, header: String(ex.headers["x-pd-prefill"] ?? "-"), ok };
}

async function run(ctx: BenchContext, base: string, sim: SimProcess): Promise<DeciderResult> {
  const busyCoresBefore = round(await machineBusyCores(1_000), 2);
  const reps = Math.max(5, ctx.counts.repeats * 2);
  const modelOf: Record<Mode, string> = { pd: "dec-pd", "decode-only": "dec-only" };
  // Warm-up (discovery, connections), checked, so a broken setup fails loudly.
  for (const m of ["dec-pd", "dec-only"]) {
    const w = await one(base, m, 64);
    if (!w.ok) throw new Error(`decider: warm-up request to ${m} failed (x-pd-prefill ${w.header})`);
  }
  const samples = new Map<string, { ttft: number[]; total: number[]; headers: Set<string> }>();
  const stopAt = performance.now() + 120_000;
  for (let r = 0; r < reps && performance.now() < stopAt; r++) {
    for (const tokens of DECIDER_LENGTHS) {
      for (const mode of rotated<Mode>(["pd", "decode-only"], r + tokens)) {
        const s = await one(base, modelOf[mode], tokens);
        if (!s.ok) throw new Error(`decider: ${mode} ${tokens} tokens: request failed`);
        const key = `${mode}:${tokens}`;
        const cell = samples.get(key) ?? { ttft: [], total: [], headers: new Set<string>() };
        cell.ttft.push(s.ttft);
        cell.total.push(s.total);
        cell.headers.add(s.header);
        samples.set(key, cell);
      }
    }
  }
  const points: DeciderPoint[] = [];
  for (const tokens of DECIDER_LENGTHS) {
    for (const mode of ["pd", "decode-only"] as const) {
      const c = samples.get(`${mode}:${tokens}`)!;
      points.push({ promptTokens: tokens, mode, requests: c.ttft.length, ttftP50Ms: round(median(c.ttft), 2), totalP50Ms: round(median(c.total), 2), pdPrefill: [...c.headers] });
    }
  }
  const p50 = (mode: Mode, tokens: number) => points.find((p) => p.mode === mode && p.promptTokens === tokens)!.ttftP50Ms;
  const gapMs = DECIDER_LENGTHS.map((t) => ({ promptTokens: t, pdMinusDecodeOnlyMs: round(p50("pd", t) - p50("decode-only", t), 2) }));
  let crossover: number | null = null;
  for (let i = DECIDER_LENGTHS.length - 1; i >= 0 && gapMs[i]!.pdMinusDecodeOnlyMs < 0; i--) crossover = DECIDER_LENGTHS[i]!;
  for (const g of gapMs) ctx.log(`decider: ${g.promptTokens} tokens: TTFT p50 PD ${p50("pd", g.promptTokens)} ms, decode-only ${p50("decode-only", g.promptTokens)} ms (PD - decode-only ${g.pdMinusDecodeOnlyMs} ms)`);
  ctx.log(`decider: crossover ${crossover ?? `none up to ${DECIDER_LENGTHS.at(-1)} tokens`}`);

  // The mixed workload, request by request with the configurations interleaved (rotated), so
  // a slow moment of the shared machine lands on every configuration alike.
  const lengths = mixedLengths(MIXED_REQUESTS, MIXED_SEED);
  const configs: { config: string; model: string; threshold: number }[] = [
    crossover !== null
      ? { config: `decider at the crossover (${crossover})`, model: `dec-t${crossover}`, threshold: crossover }
      : { config: `decider above every length (no crossover up to ${DECIDER_LENGTHS.at(-1)}: all decode-only)`, model: "dec-only", threshold: ALWAYS_SKIP },
    { config: "always PD", model: "dec-pd", threshold: 0 },
  ];
  if (crossover !== null) configs.push({ config: "always decode-only", model: "dec-only", threshold: ALWAYS_SKIP });
  const work = async (model: string) => {
    const [p, d] = await Promise.all([promptTokensComputed(sim.url(pairOf(model).prefill)), promptTokensComputed(sim.url(pairOf(model).decode))]);
    return { p, d };
  };
  const acc = configs.map(() => ({ ttft: [] as number[], ran: 0, errors: 0, prefill: 0, decode: 0 }));
  for (let i = 0; i < lengths.length && performance.now() < stopAt + 120_000; i++) {
    for (const k of rotated(configs.map((_, j) => j), i)) {
      const before = await work(configs[k]!.model);
      const s = await one(base, configs[k]!.model, lengths[i]!);
      const after = await work(configs[k]!.model);
      const a = acc[k]!;
      if (!s.ok) a.errors++;
      else a.ttft.push(s.ttft);
      if (s.header === "ran") a.ran++;
      a.prefill += after.p - before.p;
      a.decode += after.d - before.d;
    }
  }
  const runs: MixedRun[] = configs.map((c, k) => ({
    config: c.config,
    threshold: c.threshold,
    requests: acc[k]!.ttft.length + acc[k]!.errors,
    prefillRan: acc[k]!.ran,
    ttftP50Ms: round(percentile(acc[k]!.ttft, 50), 1),
    ttftP99Ms: round(percentile(acc[k]!.ttft, 99), 1),
    prefillPromptTokens: acc[k]!.prefill,
    decodePromptTokens: acc[k]!.decode,
    errors: acc[k]!.errors,
  }));
  for (const r of runs) ctx.log(`decider: mixed, ${r.config}: TTFT p50 ${r.ttftP50Ms} ms, p99 ${r.ttftP99Ms} ms; prefill ran ${r.prefillRan}/${r.requests}; prompt tokens computed prefill ${r.prefillPromptTokens}, decode ${r.decodePromptTokens}`);
  const result: DeciderResult = {
    date: new Date().toISOString(),
    repetitions: reps,
    machine: { cores: os.cpus().length, busyCoresBefore },
    latencyModel: "sim default: 0.05 ms/prompt token, 2 ms/output token, pull 2 ms + 0.01 ms/block (16-token blocks)",
    points, gapMs, crossover,
    mixed: { seed: MIXED_SEED, lengths, runs },
  };
  await mkdir("bench/results", { recursive: true });
  await writeFile("bench/results/decider.json", `${JSON.stringify(result, null, 2)}\n`);
  await writeSection(result);
  ctx.log("decider: wrote bench/results/decider.json and the \"The decider\" section of docs/benchmarks.md");
  return result;
}

const START = "<!-- decider:start -->";
const END = "<!-- decider:end -->";

async function writeSection(r: DeciderResult): Promise<void> {
  const rows = DECIDER_LENGTHS.map((t) => {
    const pd = r.points.find((p) => p.mode === "pd" && p.promptTokens === t)!;
    const only = r.points.find((p) => p.mode === "decode-only" && p.promptTokens === t)!;
    return `| ${t} | ${pd.ttftP50Ms} | ${only.ttftP50Ms} | ${r.gapMs.find((g) => g.promptTokens === t)!.pdMinusDecodeOnlyMs} | ${pd.pdPrefill.join(", ")} / ${only.pdPrefill.join(", ")} |`;
  });
  const mixed = r.mixed.runs.map((m) => `| ${m.config} | ${m.requests} | ${m.prefillRan} | ${m.ttftP50Ms} | ${m.ttftP99Ms} | ${m.prefillPromptTokens} | ${m.decodePromptTokens} | ${m.errors} |`);
  const total = r.mixed.lengths.reduce((a, b) => a + b, 0);
  const section = `${START}
## The decider (issue 18)

\`npm run bench -- --only decider\` (also part of \`npm run bench\`) on ${r.date.slice(0, 10)}, ${r.machine.cores} shared, noisy cores (${r.machine.busyCoresBefore} busy with other work when the phase started: the milliseconds are indicative, the token counts exact). A gateway from the benchmark's frozen bundle (under \`wrangler dev\`, addressed at the Worker's own workerd socket), one model per threshold, each served by its own NIXL prefill/decode pair over the OpenAI API (the sim checks the served model name), all with the sim's default latency model (${r.latencyModel}). n=1 streamed completions, ${MAX_TOKENS} tokens, token-id prompts (so the gateway counts tokens exactly), one at a time; PD and decode-only alternate request by request. TTFT is the first token event at the client. PD: \`pd.decode_only_max_prompt_tokens\` 0 (\`x-pd-prefill: ran\`); decode-only: ${ALWAYS_SKIP} (\`skipped; reason=short_prompt\`). p50 over ${r.repetitions} requests per cell. Raw figures: [bench/results/decider.json](../bench/results/decider.json).

| prompt tokens | TTFT p50 PD ms | TTFT p50 decode-only ms | PD - decode-only ms | x-pd-prefill (PD / decode-only) |
|---|---|---|---|---|
${rows.join("\n")}

Crossover (the shortest length from which PD's p50 TTFT stays below decode-only's): **${r.crossover ?? `none up to ${DECIDER_LENGTHS.at(-1)} tokens`}**.${r.crossover === null ? " In the sim's latency model a prompt costs the same 0.05 ms per token on either engine and engines do not contend (no batching, no interference between a long prefill and running decodes), so PD can only add: the prefill round trip, the pull (2 ms + 0.01 ms per 16-token block) and the gateway's second leg. On real engines the case for PD is decode interference under load, which the sim does not model; measure the curve there." : ""}

Mixed workload: ${r.mixed.lengths.length} prompts drawn log-uniform over 64..8192 tokens (seed ${r.mixed.seed}, ${total} prompt tokens in all), one at a time, the configurations interleaved request by request. p99 is nearest-rank: of ${r.mixed.lengths.length} samples, the slowest. GPU work: prompt tokens computed (\`/sim/stats\` promptTokensComputed deltas).

| configuration | requests | prefill leg ran | TTFT p50 ms | TTFT p99 ms | prefill prompt tokens computed | decode prompt tokens computed | errors |
|---|---|---|---|---|---|---|---|
${mixed.join("\n")}
${END}`;
  const doc = await readFile("docs/benchmarks.md", "utf8");
  const i = doc.indexOf(START);
  const j = doc.indexOf(END);
  await writeFile("docs/benchmarks.md", i >= 0 && j > i ? doc.slice(0, i) + section + doc.slice(j + END.length) : `${doc.trimEnd()}\n\n${section}\n`);
}
