// CPU profiles under a bounded load, to say what dominates a cost from data: the gateway's
// workerd (through wrangler dev's inspector), the pass-through Worker's, and Portkey's node
// (--inspect). The process CPU over the same window is recorded beside the sampled time.
import type { BenchContext } from "./context.js";
import type { Target } from "./http.js";
import { batch, once, type RequestSpec } from "./load.js";
import { CpuMeter } from "./proc.js";
import { bundleModuleMap, profileDuring, summarizeProfile, type ModuleMap, type ProfileSummary } from "./profile.js";
import { completionBody, M, SMALL_COMPLETION } from "./setup.js";

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

async function profileOne(ctx: BenchContext, t: Target, pid: number, inspectorPort: number, workload: string, spec: RequestSpec, map?: ModuleMap): Promise<ProfileResult> {
  const n = spec.sse ? ctx.counts.cpuStreamRequests : ctx.counts.profileRequests;
  await batch(Math.ceil(n / 10), 8, 30_000, () => once(t, spec, 8)); // warm-up
  const meter = new CpuMeter({ p: pid });
  const { profile, result } = await profileDuring(inspectorPort, () => batch(n, 8, 120_000, () => once(t, spec, 8)));
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
  const steps: [() => Promise<ProfileResult>][] = [
    [() => profileOne(ctx, ctx.gateway.target, ctx.gateway.workerPid(), ctx.gateway.dev.inspectorPort, "non-streamed completion", SMALL_COMPLETION, map)],
    [() => profileOne(ctx, ctx.gateway.target, ctx.gateway.workerPid(), ctx.gateway.dev.inspectorPort, "256-token SSE stream", sse, map)],
    [() => profileOne(ctx, ctx.passthrough.target, ctx.passthrough.workerPid(), ctx.passthrough.dev.inspectorPort, "non-streamed completion", SMALL_COMPLETION)],
    [() => profileOne(ctx, ctx.portkey.target, ctx.portkey.pid, ctx.portkey.inspectorPort, "non-streamed completion", SMALL_COMPLETION)],
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
