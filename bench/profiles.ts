// CPU profiles under a bounded load, to say what dominates a cost from data: the gateway's
// workerd (through wrangler dev's inspector), the pass-through Worker's, and Portkey's node
// (--inspect). The process CPU over the same window is recorded beside the sampled time.
import type { BenchContext } from "./context.js";
import type { Target } from "./http.js";
import { batch, once, type RequestSpec } from "./load.js";
import { CpuMeter } from "./proc.js";
import { bundleModuleMap, profileDuring, summarizeProfile, type ModuleMap, type ProfileSummary } from "./profile.js";
import { generate } from "./connect.js";
import { completionBody, M, prompt, SMALL_COMPLETION } from "./setup.js";

export interface ProfileResult {
  target: string;
  workload: string;
  requests: number;
  /** CPU of the whole process during the profiled load, per request (profiling adds to it). */
  processCpuMsPerRequest: number;
  /** Sampled busy time of the JS thread, per request. */
  sampledBusyMsPerRequest: number;
  summary: ProfileSummary;
}

/** One request of a profiled load: an HTTP exchange, or a streamed Connect Generate. */
type ProfiledWork = { spec: RequestSpec } | { connectStream: string };

async function profileOne(ctx: BenchContext, t: Target, pid: number, inspectorPort: number, workload: string, work: ProfiledWork, map?: ModuleMap): Promise<ProfileResult> {
  const stream = "connectStream" in work || work.spec.sse === true;
  const n = stream ? ctx.counts.cpuStreamRequests : ctx.counts.profileRequests;
  const one = async (): Promise<void> => {
    if ("spec" in work) await once(t, work.spec, 8);
    else await generate(t.base, { text: prompt(8), maxTokens: 256, stream: true, headers: { "x-model": work.connectStream } });
  };
  await batch(Math.ceil(n / 10), 8, 30_000, one); // warm-up
  const meter = new CpuMeter({ p: pid });
  const { profile, result } = await profileDuring(inspectorPort, () => batch(n, 8, 120_000, one));
  const { cpuMs } = meter.stop();
  const served = result.results.length;
  const summary = summarizeProfile(profile, map);
  const top = summary.byModule.slice(0, 3).map((m) => `${m.module} ${m.pct.toFixed(0)}%`).join(", ");
  ctx.log(`profile: ${t.name} ${workload}: ${(summary.busyMs / served).toFixed(3)} ms sampled/request; top: ${top}`);
  return { target: t.name, workload, requests: served, processCpuMsPerRequest: (cpuMs.p ?? 0) / served, sampledBusyMsPerRequest: summary.busyMs / served, summary };
}

export async function takeProfiles(ctx: BenchContext, bundlePath: string): Promise<ProfileResult[]> {
  const map = await bundleModuleMap(bundlePath);
  const sse: RequestSpec = { path: "/v1/completions", body: completionBody({ model: M.agg, maxTokens: 256, stream: true }), sse: true };
  const out: ProfileResult[] = [];
  const gw = ctx.gateway;
  const steps: [() => Promise<ProfileResult>][] = [
    [() => profileOne(ctx, gw.target, gw.workerPid(), gw.dev.inspectorPort, "non-streamed completion", { spec: SMALL_COMPLETION }, map)],
    [() => profileOne(ctx, gw.target, gw.workerPid(), gw.dev.inspectorPort, "256-token SSE stream", { spec: sse }, map)],
    [() => profileOne(ctx, gw.target, gw.workerPid(), gw.dev.inspectorPort, "256-token SSE stream, sse_relay native", { spec: { ...sse, body: completionBody({ model: M.aggNative, maxTokens: 256, stream: true }) } }, map)],
    // connect+proto without a deadline: the raw frame relay (docs/api.md).
    [() => profileOne(ctx, gw.target, gw.workerPid(), gw.dev.inspectorPort, "256-token Connect stream", { connectStream: M.agg }, map)],
    [() => profileOne(ctx, ctx.passthrough.target, ctx.passthrough.workerPid(), ctx.passthrough.dev.inspectorPort, "non-streamed completion", { spec: SMALL_COMPLETION })],
    [() => profileOne(ctx, ctx.portkey.target, ctx.portkey.pid, ctx.portkey.inspectorPort, "non-streamed completion", { spec: SMALL_COMPLETION })],
  ];
  for (const [step] of steps) {
    try {
      out.push(await step());
    } catch (err) {
      ctx.log(`profile: failed: ${(err as Error).message}`);
    }
  }
  return out;
}
