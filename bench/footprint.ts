// Item 5, the parts measured against running processes: start-up time of wrangler dev (spawn
// until /health answers) and resident memory (VmRSS) idle and with N long streams in flight.
import { setMaxListeners } from "node:events";
import type { BenchContext } from "./context.js";
import { agentFor, getJson, post } from "./http.js";
import { rssMb } from "./proc.js";
import { completionBody, M } from "./setup.js";
import { median } from "./stats.js";
import { startGateway, startPassthrough } from "./targets.js";

export interface MemoryFigures {
  target: string;
  process: string;
  idleMb: number;
  /** In-flight streams -> resident MB while they were all open, and MB per stream over idle. */
  inFlight: { streams: number; opened: number; rssMb: number; proxyRssMb?: number; mbPerStream: number }[];
  proxyIdleMb?: number;
}

export interface StartupFigures {
  target: string;
  /** Spawn of `wrangler dev` until its /health answered, each start. */
  readyMs: number[];
  medianReadyMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sampleRss(pid: number): number {
  return rssMb(pid);
}

async function settle(ctx: BenchContext, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  let active = -1;
  while (Date.now() < deadline) {
    active = (await getJson<{ activeRequests: number }>(`${ctx.sim.url("long")}/sim/stats`)).activeRequests;
    if (active === 0) return 0;
    await sleep(200);
  }
  return active;
}

/** Opens `n` streams to the slow engine through `base`, waits until each has its first token
 *  event, reads the memory, then aborts them all. */
async function holdStreams(ctx: BenchContext, name: string, base: string, headers: Record<string, string>, n: number, read: () => { rss: number; proxy?: number }) {
  const ac = new AbortController();
  const agent = agentFor(`mem-${name}`, n + 8);
  let opened = 0;
  // 30000 tokens at 250 ms each: hours, so every stream is still open when measured.
  const body = completionBody({ model: M.long, maxTokens: 30_000, stream: true });
  setMaxListeners(n + 16, ac.signal);
  let failed = 0;
  const allOpen = new Promise<void>((resolve) => {
    if (n === 0) resolve();
    for (let i = 0; i < n; i++) {
      post(`${base}/v1/completions`, body, {
        agent,
        headers,
        sse: true,
        signal: ac.signal,
        timeoutMs: 120_000,
        onFirstEvent: () => {
          if (++opened === n) resolve();
        },
      })
        .then((ex) => {
          if (ex.status !== 200) failed++;
        })
        .catch(() => undefined);
    }
  });
  await Promise.race([allOpen, sleep(30_000)]);
  await sleep(1_000);
  const samples: { rss: number; proxy?: number }[] = [];
  for (let i = 0; i < 3; i++) {
    samples.push(read());
    await sleep(250);
  }
  ac.abort();
  agent.destroy();
  const left = await settle(ctx, 20_000);
  if (left > 0) ctx.log(`memory: ${name}: ${left} engine requests still running 20 s after the abort`);
  if (failed > 0) ctx.log(`memory: ${name}: ${failed} of ${n} streams were refused`);
  const proxies = samples.map((s) => s.proxy).filter((x): x is number => x !== undefined);
  return { opened, rss: median(samples.map((s) => s.rss)), ...(proxies.length ? { proxy: median(proxies) } : {}) };
}

export async function measureMemory(ctx: BenchContext): Promise<MemoryFigures[]> {
  const out: MemoryFigures[] = [];
  out.push(await measureOne(ctx, { name: "gateway", process: "workerd (the Worker)", base: ctx.gateway.target.base, headers: {}, pid: ctx.gateway.workerPid, proxy: ctx.gateway.proxyPid }));
  // The pass-through forwards to the engine it was started with (agg0): memory is measured
  // with a second one, in front of the slow engine, started and stopped here.
  const slow = await startPassthrough(ctx.passthroughConfig, ctx.sim.url("long"));
  try {
    out.push(await measureOne(ctx, { name: "passthrough", process: "workerd (the Worker)", base: slow.target.base, headers: {}, pid: slow.workerPid, proxy: slow.proxyPid }));
  } finally {
    await slow.dev.stop();
  }
  // Portkey takes its upstream per request.
  const headers = { ...ctx.portkey.target.headers, "x-portkey-custom-host": `${ctx.sim.url("long")}/v1` };
  out.push(await measureOne(ctx, { name: "portkey", process: "node", base: ctx.portkey.target.base, headers, pid: () => ctx.portkey.pid, proxy: () => undefined }));
  return out;
}

async function measureOne(
  ctx: BenchContext,
  p: { name: string; process: string; base: string; headers: Record<string, string>; pid: () => number; proxy: () => number | undefined },
): Promise<MemoryFigures> {
  // Warm the path (first streams allocate lazily), then let it settle.
  await holdStreams(ctx, p.name, p.base, p.headers, 5, () => ({ rss: 0 }));
  await sleep(2_000);
  const proxyPid = p.proxy();
  const idleMb = sampleRss(p.pid());
  const fig: MemoryFigures = { target: p.name, process: p.process, idleMb, inFlight: [], ...(proxyPid !== undefined ? { proxyIdleMb: sampleRss(proxyPid) } : {}) };
  for (const n of ctx.counts.memoryStreams) {
    const r = await holdStreams(ctx, p.name, p.base, p.headers, n, () => ({ rss: sampleRss(p.pid()), ...(proxyPid !== undefined ? { proxy: sampleRss(proxyPid) } : {}) }));
    fig.inFlight.push({ streams: n, opened: r.opened, rssMb: r.rss, ...(r.proxy !== undefined ? { proxyRssMb: r.proxy } : {}), mbPerStream: r.opened > 0 ? (r.rss - idleMb) / r.opened : NaN });
    ctx.log(`memory: ${p.name}: ${r.opened}/${n} streams open: ${r.rss.toFixed(1)} MB (idle ${idleMb.toFixed(1)} MB) -> ${((r.rss - idleMb) / n).toFixed(3)} MB/stream`);
    await sleep(1_000);
  }
  return fig;
}

/** Extra cold starts of wrangler dev for the gateway and the pass-through (each stopped again). */
export async function measureStartups(ctx: BenchContext, buildDir: string, gatewayConfig: unknown, first: { gateway: number; passthrough: number }): Promise<StartupFigures[]> {
  const gw = [first.gateway];
  const pt = [first.passthrough];
  for (let i = 0; i < ctx.counts.extraStarts; i++) {
    const g = await startGateway(buildDir, gatewayConfig, `gateway-start-${i}`);
    gw.push(g.dev.readyMs);
    await g.dev.stop();
    const p = await startPassthrough(ctx.passthroughConfig, ctx.sim.url("agg0"));
    pt.push(p.dev.readyMs);
    await p.dev.stop();
    ctx.log(`startup: extra start ${i + 1}/${ctx.counts.extraStarts}: gateway ${g.dev.readyMs.toFixed(0)} ms, passthrough ${p.dev.readyMs.toFixed(0)} ms`);
  }
  return [
    { target: "gateway", readyMs: gw, medianReadyMs: median(gw) },
    { target: "passthrough", readyMs: pt, medianReadyMs: median(pt) },
  ];
}
