// Item 2: CPU per request — utime+stime of the process that serves the requests (/proc), over
// a bounded batch, divided by the requests served. The Worker's figure is its own workerd;
// the wrangler dev proxy in front of every Worker is reported apart (a dev-only hop).
import { generate } from "./connect.js";
import type { BenchContext } from "./context.js";
import type { Target } from "./http.js";
import { batch, once, type RequestSpec } from "./load.js";
import { CpuMeter } from "./proc.js";
import { startPassthrough } from "./targets.js";
import { completionBody, M, prompt, SMALL_COMPLETION, SMALL_MAX_TOKENS } from "./setup.js";

export interface CpuCase {
  case: string;
  target: string;
  requests: number;
  errors: number;
  wallMs: number;
  /** CPU ms per request of the serving process (the Worker's workerd, or Portkey's node). */
  cpuMsPerRequest: number;
  /** The wrangler dev proxy's CPU ms per request (Workers reached through wrangler dev's port). */
  proxyCpuMsPerRequest?: number;
  ticks: number;
  /** Idle CPU of the process over the same wall time, already subtracted. */
  idleCorrectionMs: number;
  /** Streams: token events per request, and CPU per token event. */
  chunksPerRequest?: number;
  cpuMsPerChunk?: number;
}

export interface Serving {
  target: Target;
  pid: () => number;
  proxy?: () => number | undefined;
}

/** One request; resolves to the token events it carried (streams) or 0. */
export type Work = (t: Target) => Promise<number>;

const SMALL = `non-streamed completion (${SMALL_MAX_TOKENS} tokens)`;
const STREAM_256 = completionBody({ model: M.agg, maxTokens: 256, stream: true });
const STREAM_256_NATIVE = completionBody({ model: M.aggNative, maxTokens: 256, stream: true });

function httpWork(spec: RequestSpec): Work {
  return async (t) => (await once(t, spec, 16)).events?.length ?? 0;
}

function connectWork(model: string, maxTokens: number, stream: boolean, json = false, headers: Record<string, string> = {}): Work {
  return async (t) => {
    const r = await generate(t.base, { text: prompt(8), maxTokens, stream, json, headers: { "x-model": model, ...headers } });
    return stream ? r.chunks.length : 0;
  };
}

async function idleRate(pids: Record<string, number | undefined>): Promise<Record<string, number>> {
  const m = new CpuMeter(pids);
  await new Promise((r) => setTimeout(r, 1_000));
  const { wallMs, cpuMs } = m.stop();
  return Object.fromEntries(Object.entries(cpuMs).map(([k, v]) => [k, v / wallMs]));
}

/** One case's metered totals, summed over its rounds. */
interface Tally {
  served: number;
  errors: number;
  chunks: number;
  wallMs: number;
  cpuMs: { worker: number; proxy: number };
  idleMs: { worker: number; proxy: number };
  ticks: number;
}

export type CpuPlan = [name: string, serving: Serving, work: Work, requests: number][];

/** One case, measured in one block. */
export async function measure(ctx: BenchContext, name: string, s: Serving, work: Work, n: number): Promise<CpuCase> {
  return (await measureRounds(ctx, [[name, s, work, n]], 1))[0]!;
}

/** The plan's cases in `rounds` rounds, each case's requests split evenly between them: every
 *  round runs every case in order, so the machine's drift over the minutes a plan takes falls
 *  on all targets alike instead of on whichever case ran during a busy spell. A case's figure
 *  is its CPU summed over the rounds, over the requests served. */
export async function measureRounds(ctx: BenchContext, plan: CpuPlan, rounds: number): Promise<CpuCase[]> {
  const conc = ctx.counts.cpuConcurrency;
  const idleByPid = new Map<string, Record<string, number>>();
  const idle: Record<string, number>[] = [];
  for (const [, s, work, n] of plan) {
    await batch(Math.min(200, Math.ceil(n / 5)), conc, 30_000, () => work(s.target)); // warm-up
    const pids = { worker: s.pid(), proxy: s.proxy?.() };
    const key = `${pids.worker}/${pids.proxy ?? ""}`;
    if (!idleByPid.has(key)) idleByPid.set(key, await idleRate(pids));
    idle.push(idleByPid.get(key)!);
  }
  const tallies: Tally[] = plan.map(() => ({ served: 0, errors: 0, chunks: 0, wallMs: 0, cpuMs: { worker: 0, proxy: 0 }, idleMs: { worker: 0, proxy: 0 }, ticks: 0 }));
  for (let round = 0; round < rounds; round++) {
    if (rounds > 1) ctx.log(`cpu: round ${round + 1} of ${rounds}`);
    for (const [i, [, s, work, n]] of plan.entries()) await slice(ctx, s, work, Math.ceil(n / rounds), idle[i]!, tallies[i]!);
  }
  return plan.map(([name, s], i) => {
    const out = caseOf(name, s, tallies[i]!);
    ctx.log(`cpu: ${name} via ${s.target.name}: ${out.cpuMsPerRequest.toFixed(3)} ms/request (${out.requests} requests, ${out.ticks} ticks${out.errors ? `, ${out.errors} errors` : ""})`);
    return out;
  });
}

async function slice(ctx: BenchContext, s: Serving, work: Work, n: number, idle: Record<string, number>, t: Tally): Promise<void> {
  const meter = new CpuMeter({ worker: s.pid(), proxy: s.proxy?.() });
  const res = await batch(n, ctx.counts.cpuConcurrency, 120_000, () => work(s.target));
  const { wallMs, cpuMs, ticks } = meter.stop();
  t.served += res.results.length;
  t.errors += res.errors.length;
  t.chunks += res.results.reduce((a, b) => a + b, 0);
  t.wallMs += wallMs;
  t.ticks += ticks.worker ?? 0;
  t.cpuMs.worker += cpuMs.worker ?? 0;
  t.cpuMs.proxy += cpuMs.proxy ?? 0;
  t.idleMs.worker += (idle.worker ?? 0) * wallMs;
  t.idleMs.proxy += (idle.proxy ?? 0) * wallMs;
}

function caseOf(name: string, s: Serving, t: Tally): CpuCase {
  const served = Math.max(1, t.served);
  const out: CpuCase = {
    case: name,
    target: s.target.name,
    requests: t.served,
    errors: t.errors,
    wallMs: t.wallMs,
    cpuMsPerRequest: Math.max(0, t.cpuMs.worker - t.idleMs.worker) / served,
    ticks: t.ticks,
    idleCorrectionMs: t.idleMs.worker,
  };
  if (t.chunks > 0) {
    out.chunksPerRequest = t.chunks / served;
    out.cpuMsPerChunk = (out.cpuMsPerRequest * served) / t.chunks;
  }
  if (s.proxy !== undefined) out.proxyCpuMsPerRequest = Math.max(0, t.cpuMs.proxy - t.idleMs.proxy) / served;
  return out;
}

export async function measureCpu(ctx: BenchContext): Promise<CpuCase[]> {
  const gw: Serving = { target: ctx.gateway.target, pid: ctx.gateway.workerPid };
  const pt: Serving = { target: ctx.passthrough.target, pid: ctx.passthrough.workerPid };
  const gwDev: Serving = { target: ctx.gateway.viaDev, pid: ctx.gateway.workerPid, proxy: ctx.gateway.proxyPid };
  const ptDev: Serving = { target: ctx.passthrough.viaDev, pid: ctx.passthrough.workerPid, proxy: ctx.passthrough.proxyPid };
  const pk: Serving = { target: ctx.portkey.target, pid: () => ctx.portkey.pid };
  const pd = (n: number) => ({ path: "/v1/completions", body: completionBody({ model: M.pd0, maxTokens: SMALL_MAX_TOKENS, n }) });
  const floorWorker = await startPassthrough(ctx.relayFloorConfig, ctx.sim.url("agg0"), "relay floor");
  try {
    const floor: Serving = { target: floorWorker.target, pid: floorWorker.workerPid };
    const shaped = (shape: keyof typeof FLOOR_CASES) => ({ "x-relay-shape": shape });
    const sseFloor = (shape: keyof typeof FLOOR_CASES): Work => httpWork({ path: "/v1/completions", body: STREAM_256, sse: true, headers: shaped(shape) });
    const connectFloor = (shape: keyof typeof FLOOR_CASES): Work => connectWork(M.agg, 256, true, false, shaped(shape));
    const streams = ctx.counts.cpuStreamRequests;
    // Each relay-floor case right after the pass-through's on the same stream: the machine's
    // load drifts over minutes, and these are read as ratios to that pass-through.
    const plan: [string, Serving, Work, number?][] = [
      [SMALL, gw, httpWork(SMALL_COMPLETION)],
      [SMALL, pt, httpWork(SMALL_COMPLETION)],
      [SMALL, pk, httpWork(SMALL_COMPLETION)],
      [SMALL, gwDev, httpWork(SMALL_COMPLETION)],
      [SMALL, ptDev, httpWork(SMALL_COMPLETION)],
      ["256-token SSE stream", gw, httpWork({ path: "/v1/completions", body: STREAM_256, sse: true }), streams],
      ["256-token SSE stream", pt, httpWork({ path: "/v1/completions", body: STREAM_256, sse: true }), streams],
      [`256-token SSE stream, ${FLOOR_CASES.loop}`, floor, sseFloor("loop"), streams],
      [`256-token SSE stream, ${FLOOR_CASES.tee}`, floor, sseFloor("tee"), streams],
      [`256-token SSE stream, ${FLOOR_CASES.teepipe}`, floor, sseFloor("teepipe"), streams],
      [`256-token SSE stream, ${FLOOR_CASES.pipe}`, floor, sseFloor("pipe"), streams],
      ["256-token SSE stream, sse_relay native", gw, httpWork({ path: "/v1/completions", body: STREAM_256_NATIVE, sse: true }), streams],
      ["256-token SSE stream", pk, httpWork({ path: "/v1/completions", body: STREAM_256, sse: true }), streams],
      ["256-token Connect stream", gw, connectWork(M.agg, 256, true), streams],
      ["256-token Connect stream", pt, connectWork(M.agg, 256, true), streams],
      [`256-token Connect stream, ${FLOOR_CASES.pull}`, floor, connectFloor("pull"), streams],
      [`256-token Connect stream, ${FLOOR_CASES.loop}`, floor, connectFloor("loop"), streams],
      [`256-token Connect stream, ${FLOOR_CASES.teepipe}`, floor, connectFloor("teepipe"), streams],
      ["256-token Connect stream, connect+json (decoded path)", gw, connectWork(M.agg, 256, true, true), streams],
      ["256-token Connect stream, connect+json (decoded path)", pt, connectWork(M.agg, 256, true, true), streams],
      ["PD, OpenAI HTTP, n=1 (prefill + decode legs)", gw, httpWork(pd(1))],
      ["PD, OpenAI HTTP, n=4 (prefill skipped)", gw, httpWork(pd(4))],
      ["PD, Connect, n=1 (prefill + decode legs)", gw, connectWork(M.pd0, SMALL_MAX_TOKENS, false)],
    ];
    const full: CpuPlan = plan.map(([name, s, work, n]) => [name, s, work, n ?? ctx.counts.cpuRequests]);
    // Through wrangler dev's proxy (a dev-only hop, for scale) requests hang once the proxy has
    // been idle through minutes of load elsewhere (measured: every request of a later round
    // timed out), so those cases run first, in one block each.
    const viaDev = (c: CpuPlan[number]) => c[1].proxy !== undefined;
    const blocks = await measureRounds(ctx, full.filter(viaDev), 1);
    const rounded = await measureRounds(ctx, full.filter((c) => !viaDev(c)), ctx.counts.repeats);
    return full.map((c) => (viaDev(c) ? blocks : rounded).find((r) => r.case === c[0] && r.target === c[1].target.name)!);
  } finally {
    await floorWorker.dev.stop();
  }
}

/** The relay-floor cases, by shape: relays on a bare Worker (bench/relay-floor-worker/index.ts),
 *  what a relay that runs JS per chunk costs at least. */
export const FLOOR_CASES = {
  loop: "relay floor: JS read loop into an IdentityTransformStream",
  pull: "relay floor: JS-pulled ReadableStream body",
  tee: "relay floor: tee(), one branch read in JS",
  teepipe: "relay floor: tee(), one branch piped natively, the other read in 50 ms batches",
  pipe: "relay floor: the body piped natively into an IdentityTransformStream, no copy",
} as const;
