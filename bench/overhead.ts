// Item 1: added latency (concurrency 1) and throughput (concurrency 32) of a small
// non-streamed completion: the sim directly (the limit), the bare pass-through Worker (the
// floor for any Worker), the gateway, and the Portkey gateway, side by side in each repeat.
import type { BenchContext } from "./context.js";
import { getJson, type Target } from "./http.js";
import { interleaved, once, throughput, type Throughput } from "./load.js";
import { SMALL_COMPLETION } from "./setup.js";
import { median, percentile, ratio, rotated } from "./stats.js";

export interface OverheadTarget {
  target: string;
  /** One request through it raised the sim engine's generateRequests by exactly one. */
  reachesSim: boolean;
  p50Ms: number;
  p99Ms: number;
  /** Minus the direct figure of the same repeat, then the median over repeats. */
  addedP50Ms: number;
  addedP99Ms: number;
  requestsPerSec: number;
  /** Latency under the concurrency-32 load (autocannon), medians over repeats. */
  loadedP50Ms: number;
  loadedP99Ms: number;
  non2xx: number;
  errors: number;
  perRepeat: { p50Ms: number; p99Ms: number; requestsPerSec: number }[];
}

export interface OverheadResult {
  request: string;
  latencyRequestsPerTargetPerRepeat: number;
  throughputSeconds: number;
  connections: number;
  targets: OverheadTarget[];
  ratios: {
    gatewayVsPassthroughThroughput: number;
    gatewayVsPortkeyThroughput: number;
    gatewayVsDirectThroughput: number;
    passthroughVsDirectThroughput: number;
    gatewayAddedP50VsPassthroughAddedP50: number;
    /** The same two, each through wrangler dev's proxy. */
    gatewayVsPassthroughThroughputViaDev: number;
  };
}

async function reaches(ctx: BenchContext, t: Target): Promise<boolean> {
  const stats = () => getJson<{ generateRequests: number }>(`${ctx.sim.url("agg0")}/sim/stats`);
  const before = (await stats()).generateRequests;
  await once(t, SMALL_COMPLETION);
  return (await stats()).generateRequests - before === 1;
}

export async function measureOverhead(ctx: BenchContext): Promise<OverheadResult> {
  const { counts } = ctx;
  const targets = [ctx.direct("agg0"), ctx.passthrough.target, ctx.gateway.target, ctx.portkey.target, ctx.passthrough.viaDev, ctx.gateway.viaDev];
  const reached = new Map<string, boolean>();
  for (const t of targets) reached.set(t.name, await reaches(ctx, t));
  ctx.log(`overhead: every target reaches the sim: ${[...reached].map(([k, v]) => `${k}=${v}`).join(" ")}`);
  await interleaved(targets, SMALL_COMPLETION, 100, 30_000); // warm-up

  const lat = new Map<string, { p50: number; p99: number }[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < counts.repeats; r++) {
    const got = await interleaved(targets, SMALL_COMPLETION, counts.latencyRounds, 120_000);
    const line: string[] = [];
    for (const t of targets) {
      const ms = got.get(t.name)!.map((e) => e.totalMs);
      lat.get(t.name)!.push({ p50: percentile(ms, 50), p99: percentile(ms, 99) });
      line.push(`${t.name} p50=${percentile(ms, 50).toFixed(2)}ms`);
    }
    ctx.log(`overhead: c=1 repeat ${r + 1}/${counts.repeats}: ${line.join(" ")}`);
  }

  const tput = new Map<string, Throughput[]>(targets.map((t) => [t.name, []]));
  for (const t of targets) await throughput(t, SMALL_COMPLETION, counts.throughputConnections, 1); // warm-up
  for (let r = 0; r < counts.repeats; r++) {
    const line: string[] = [];
    for (const t of rotated(targets, r)) {
      const res = await throughput(t, SMALL_COMPLETION, counts.throughputConnections, counts.throughputSeconds);
      tput.get(t.name)!.push(res);
      line.push(`${t.name}=${res.requestsPerSec.toFixed(0)}/s`);
    }
    ctx.log(`overhead: c=${counts.throughputConnections} repeat ${r + 1}/${counts.repeats}: ${line.join(" ")}`);
  }

  const direct = lat.get("direct")!;
  const out: OverheadTarget[] = targets.map((t) => {
    const l = lat.get(t.name)!;
    const tp = tput.get(t.name)!;
    return {
      target: t.name,
      reachesSim: reached.get(t.name) ?? false,
      p50Ms: median(l.map((x) => x.p50)),
      p99Ms: median(l.map((x) => x.p99)),
      addedP50Ms: median(l.map((x, i) => x.p50 - direct[i]!.p50)),
      addedP99Ms: median(l.map((x, i) => x.p99 - direct[i]!.p99)),
      requestsPerSec: median(tp.map((x) => x.requestsPerSec)),
      loadedP50Ms: median(tp.map((x) => x.latencyP50Ms)),
      loadedP99Ms: median(tp.map((x) => x.latencyP99Ms)),
      non2xx: tp.reduce((a, x) => a + x.non2xx, 0),
      errors: tp.reduce((a, x) => a + x.errors, 0),
      perRepeat: l.map((x, i) => ({ p50Ms: x.p50, p99Ms: x.p99, requestsPerSec: tp[i]?.requestsPerSec ?? NaN })),
    };
  });
  const by = (n: string) => out.find((o) => o.target === n)!;
  // Ratios per repeat (the targets ran back to back in it), then the median.
  const rps = (n: string) => tput.get(n)!.map((x) => x.requestsPerSec);
  const perRepeatRatio = (a: string, b: string) => median(rps(a).map((x, i) => ratio(x, rps(b)[i]!)));
  return {
    request: `POST /v1/completions ${SMALL_COMPLETION.body}`,
    latencyRequestsPerTargetPerRepeat: counts.latencyRounds,
    throughputSeconds: counts.throughputSeconds,
    connections: counts.throughputConnections,
    targets: out,
    ratios: {
      gatewayVsPassthroughThroughput: perRepeatRatio("gateway", "passthrough"),
      gatewayVsPortkeyThroughput: perRepeatRatio("gateway", "portkey"),
      gatewayVsDirectThroughput: perRepeatRatio("gateway", "direct"),
      passthroughVsDirectThroughput: perRepeatRatio("passthrough", "direct"),
      gatewayAddedP50VsPassthroughAddedP50: ratio(by("gateway").addedP50Ms, by("passthrough").addedP50Ms),
      gatewayVsPassthroughThroughputViaDev: perRepeatRatio(ctx.gateway.viaDev.name, ctx.passthrough.viaDev.name),
    },
  };
}
