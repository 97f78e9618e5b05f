// Item 6: how cost grows with work on the HTTP path (OpenAI surface, aggregated, zero-latency
// engine, non-streamed): latency (gateway vs direct, interleaved) and the gateway's CPU per
// request at prompts of 128 / 2k / 16k tokens and n = 1 / 4 / 16.
import type { BenchContext } from "./context.js";
import { batch, interleaved, once } from "./load.js";
import { CpuMeter } from "./proc.js";
import { completionBody, M, SMALL_MAX_TOKENS } from "./setup.js";
import { median, percentile } from "./stats.js";

export interface ScalingCell {
  promptTokens: number;
  n: number;
  requestBytes: number;
  directP50Ms: number;
  gatewayP50Ms: number;
  addedP50Ms: number;
  gatewayCpuMsPerRequest: number;
  cpuRequests: number;
  ticks: number;
}

export const PROMPTS = [128, 2048, 16384];
export const NS = [1, 4, 16];

export async function measureScaling(ctx: BenchContext): Promise<ScalingCell[]> {
  const { counts } = ctx;
  const targets = [ctx.direct("agg0"), ctx.gateway.target];
  const cells: ScalingCell[] = [];
  for (const promptTokens of PROMPTS) {
    for (const n of NS) {
      const spec = { path: "/v1/completions", body: completionBody({ model: M.agg, promptTokens, n, maxTokens: SMALL_MAX_TOKENS }) };
      await interleaved(targets, spec, 3, 30_000); // warm-up
      const direct: number[] = [];
      const gateway: number[] = [];
      const added: number[] = [];
      for (let r = 0; r < counts.repeats; r++) {
        const got = await interleaved(targets, spec, counts.scalingRounds, 60_000);
        const d = percentile(got.get("direct")!.map((e) => e.totalMs), 50);
        const g = percentile(got.get("gateway")!.map((e) => e.totalMs), 50);
        direct.push(d);
        gateway.push(g);
        added.push(g - d);
      }
      const meter = new CpuMeter({ worker: ctx.gateway.workerPid() });
      const res = await batch(counts.scalingCpuRequests, 4, 120_000, () => once(ctx.gateway.target, spec, 4));
      const { cpuMs, ticks } = meter.stop();
      const served = res.results.length;
      const cell: ScalingCell = {
        promptTokens,
        n,
        requestBytes: Buffer.byteLength(spec.body),
        directP50Ms: median(direct),
        gatewayP50Ms: median(gateway),
        addedP50Ms: median(added),
        gatewayCpuMsPerRequest: (cpuMs.worker ?? 0) / served,
        cpuRequests: served,
        ticks: ticks.worker ?? 0,
      };
      cells.push(cell);
      ctx.log(`scaling: prompt ${promptTokens} n=${n}: added p50 ${cell.addedP50Ms.toFixed(2)} ms, gateway CPU ${cell.gatewayCpuMsPerRequest.toFixed(3)} ms/request (${cell.ticks} ticks)`);
    }
  }
  return cells;
}
