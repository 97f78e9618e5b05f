// The targets each figure is reported against (never asserted), and for a missed one, what
// dominates its cost, said from the run's own profiles and CPU figures.
import { FLOOR_CASES, type CpuCase } from "./cpu.js";
import type { ProfileResult } from "./profiles.js";
import type { BenchResult } from "./report.js";

export interface Verdict {
  id: string;
  target: string;
  figure: string;
  value: string;
  met: boolean | undefined;
}

const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(d));

export function cpuOf(r: BenchResult, kase: string, target: string): CpuCase | undefined {
  return r.cpu?.find((c) => c.case.startsWith(kase) && c.target === target);
}

export function profileOf(r: BenchResult, target: string, workload: string): ProfileResult | undefined {
  return r.profiles?.find((p) => p.target === target && p.workload.startsWith(workload));
}

export function verdicts(r: BenchResult): Verdict[] {
  const out: Verdict[] = [];
  const gw = r.overhead?.targets.find((t) => t.target === "gateway");
  out.push({ id: "latency", target: "added p50 latency <= 1 ms over direct", figure: "gateway added p50, c=1", value: `${f(gw?.addedP50Ms)} ms`, met: gw ? gw.addedP50Ms <= 1 : undefined });
  const vsPt = r.overhead?.ratios.gatewayVsPassthroughThroughput;
  out.push({ id: "vs-passthrough", target: ">= 90% of the pass-through Worker's throughput", figure: "gateway / pass-through req/s, c=32", value: vsPt === undefined ? "n/a" : `${(100 * vsPt).toFixed(0)}%`, met: vsPt === undefined ? undefined : vsPt >= 0.9 });
  const vsPk = r.overhead?.ratios.gatewayVsPortkeyThroughput;
  out.push({ id: "vs-portkey", target: ">= 2x the Portkey gateway's throughput", figure: "gateway / Portkey req/s, c=32", value: vsPk === undefined ? "n/a" : `${f(vsPk)}x`, met: vsPk === undefined ? undefined : vsPk >= 2 });
  const cpu = cpuOf(r, "non-streamed", "gateway");
  out.push({ id: "cpu", target: "CPU per non-streamed request <= 0.5 ms", figure: "gateway workerd utime+stime / requests", value: `${f(cpu?.cpuMsPerRequest, 3)} ms`, met: cpu ? cpu.cpuMsPerRequest <= 0.5 : undefined });
  // Issue 17: the relay against the pass-through Worker, measured side by side in this run.
  const ratio = (kase: string, per: "request" | "chunk", target = "gateway") => {
    const g = cpuOf(r, kase, target);
    const p = cpuOf(r, kase.split(",")[0]!, "passthrough");
    const a = per === "chunk" ? g?.cpuMsPerChunk : g?.cpuMsPerRequest;
    const b = per === "chunk" ? p?.cpuMsPerChunk : p?.cpuMsPerRequest;
    return a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
  };
  const ratios: [string, string, string, "request" | "chunk", number][] = [
    ["ratio-cpu", "CPU per non-streamed completion <= 1.15x the pass-through Worker's", "non-streamed", "request", 1.15],
    ["ratio-sse", "CPU per SSE chunk <= 1.5x the pass-through Worker's (sse_relay inspect)", "256-token SSE stream", "chunk", 1.5],
    // Issue 30: the defaults at pass-through cost.
    ["ratio-sse-native", "CPU per SSE chunk, default relay (sse_relay native) <= 1.2x the pass-through Worker's", "256-token SSE stream, sse_relay native", "chunk", 1.2],
    ["ratio-connect", "CPU per Connect frame, binary wire, default relay <= 1.5x the pass-through Worker's", "256-token Connect stream", "chunk", 1.5],
  ];
  for (const [id, target, kase, per, max] of ratios) {
    const x = kase === "256-token SSE stream" ? ratioExact(r, kase, per) : ratio(kase, per);
    const floor = FLOOR_OF[id];
    const floorNote = floor ? floorRatio(r, floor[0], floor[1]) : undefined;
    const value = x === undefined ? "n/a" : `${f(x)}x${floorNote === undefined ? "" : ` (floor: ${f(floorNote)}x)`}`;
    out.push({ id, target, figure: `gateway / pass-through CPU per ${per}, ${kase}`, value, met: x === undefined ? undefined : x <= max });
  }
  // Issue 30: the first chat request on a fresh isolate (the bundle's load plus the first
  // request's template compile and encode, bench/tokenizer.ts).
  const tok = r.tokenizer;
  out.push({ id: "first-chat-cache", target: "first chat request on a fresh isolate, bundle from the cross-isolate cache: added work <= 150 ms", figure: "tokenizer load from the cached fast form + first encode, p50", value: tok ? `${f(tok.cacheLoadMs.p50, 0)} ms` : "n/a", met: tok ? tok.cacheLoadMs.p50 <= 150 : undefined });
  out.push({ id: "first-chat-engine", target: "first chat request on a fresh isolate, bundle from the engine: added work <= 400 ms", figure: "tokenizer load via GetTokenizer (ZIP) + first encode, p50", value: tok ? `${f(tok.engineLoadMs.p50, 0)} ms` : "n/a", met: tok ? tok.engineLoadMs.p50 <= 400 : undefined });
  // Issue 28: the parsers' cost per token, against the same model's stream without them.
  const parsers = r.parsers?.ratios.find((x) => x.id === "parsers")?.ratio;
  out.push({ id: "ratio-parsers", target: "CPU per streamed token with tool + reasoning parsers <= 1.3x without", figure: "gateway CPU per token, Qwen3 VllmEngine chat stream: tools + thinking on / no tools, thinking off", value: parsers === undefined ? "n/a" : `${f(parsers)}x`, met: parsers === undefined ? undefined : parsers <= 1.3 });
  const pt = r.overhead?.targets.find((t) => t.target === "passthrough");
  const addedOverPt = gw && pt ? gw.addedP50Ms - pt.addedP50Ms : undefined;
  out.push({ id: "latency-vs-passthrough", target: "added p50 latency <= the pass-through Worker's + 0.2 ms", figure: "gateway added p50 - pass-through added p50, c=1", value: addedOverPt === undefined ? "n/a" : `${f(addedOverPt)} ms`, met: addedOverPt === undefined ? undefined : addedOverPt <= 0.2 });
  const deployed = r.footprint?.productionBundle;
  out.push({ id: "bundle", target: "bundle <= 200 KiB gzip", figure: "gzip -9 of the deployed `[env.production]` bundle", value: deployed ? `${f(deployed.gzipBytes / 1024, 1)} KiB` : "n/a", met: deployed ? deployed.gzipBytes <= 200 * 1024 : undefined });
  const startup = r.footprint?.isolateStartup?.cpuMs;
  out.push({ id: "startup", target: "isolate start-up CPU <= 20 ms", figure: "`wrangler check startup`, sampled CPU", value: startup === undefined ? "n/a" : `${f(startup, 1)} ms`, met: startup === undefined ? undefined : startup <= 20 });
  for (const s of r.fanout?.savings ?? []) {
    out.push({
      id: `saving-${s.surface}-${s.promptTokens}`,
      target: "fan-out TTFT saving = the prefill leg's latency",
      figure: `${s.surface}, ${s.promptTokens}-token prompt, n=4: TTFT(force-prefill) - TTFT(skip) vs the prefill leg alone`,
      value: `${f(s.ttftSavingMs, 1)} ms vs ${f(s.prefillLegMs, 1)} ms`,
      // Equal within measurement noise: at least 90% of the leg.
      met: s.ttftSavingMs >= 0.9 * s.prefillLegMs,
    });
  }
  const skipCells = r.fanout?.cells.filter((c) => c.mode === "fanout-skip") ?? [];
  if (skipCells.length) {
    const worst = Math.max(...skipCells.map((c) => c.prefillPromptTokensPerRequest));
    out.push({ id: "zero-prefill", target: "zero prefill GPU work for fan-out", figure: "prefill engine promptTokensComputed per n=4 request, predicate on", value: `${f(worst, 0)} tokens`, met: worst === 0 });
  }
  return out;
}

type FloorStream = "256-token SSE stream" | "256-token Connect stream";

/** The relay-floor shape each per-chunk target's relay is built on (the floor it cannot beat). */
const FLOOR_OF: Partial<Record<string, [FloorStream, keyof typeof FLOOR_CASES]>> = {
  "ratio-sse": ["256-token SSE stream", "loop"],
  "ratio-sse-native": ["256-token SSE stream", "teepipe"],
  // generate_relay "native" (the default): the raw relay's first frames in JS, then the tee.
  "ratio-connect": ["256-token Connect stream", "teepipe"],
};

/** CPU per chunk of a bare Worker relaying `stream` in `shape` (bench/relay-floor-worker), over
 *  the pass-through Worker's on the same stream: the least any relay of that shape costs. */
export function floorRatio(r: BenchResult, stream: FloorStream, shape: keyof typeof FLOOR_CASES): number | undefined {
  const a = r.cpu?.find((c) => c.case === `${stream}, ${FLOOR_CASES[shape]}` && c.target === "relay floor")?.cpuMsPerChunk;
  const b = r.cpu?.find((c) => c.case === stream && c.target === "passthrough")?.cpuMsPerChunk;
  return a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
}

/** The ratio for a case named exactly `kase` (not the cases that only start with it). */
function ratioExact(r: BenchResult, kase: string, per: "request" | "chunk"): number | undefined {
  const g = r.cpu?.find((c) => c.case === kase && c.target === "gateway");
  const p = r.cpu?.find((c) => c.case === kase && c.target === "passthrough");
  const a = per === "chunk" ? g?.cpuMsPerChunk : g?.cpuMsPerRequest;
  const b = per === "chunk" ? p?.cpuMsPerChunk : p?.cpuMsPerRequest;
  return a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
}

function topModules(p: ProfileResult | undefined, k = 4): string {
  if (!p) return "(no profile)";
  return p.summary.byModule.slice(0, k).map((m) => `${m.module} ${m.pct.toFixed(0)}%`).join(", ");
}

function split(p: ProfileResult | undefined): string {
  if (!p) return "(no profile)";
  const s = p.summary;
  const pct = (x: number) => (s.busyMs > 0 ? ((100 * x) / s.busyMs).toFixed(0) : "0");
  return `${pct(s.programMs)}% native runtime code \`(program)\`, ${pct(s.gcMs)}% garbage collection, ${pct(s.jsMs)}% JavaScript`;
}

/** One paragraph per missed target: what its cost is made of, from this run's data. */
export function explanations(r: BenchResult): string[] {
  const missed = verdicts(r).filter((v) => v.met === false);
  const gwProf = profileOf(r, "gateway", "non-streamed");
  const ptProf = profileOf(r, "passthrough", "non-streamed");
  const pkProf = profileOf(r, "portkey", "non-streamed");
  const gwCpu = cpuOf(r, "non-streamed", "gateway");
  const ptCpu = cpuOf(r, "non-streamed", "passthrough");
  const pkCpu = cpuOf(r, "non-streamed", "portkey");
  const out: string[] = [];
  const seen = new Set<string>();
  for (const v of missed) {
    const kind = v.id.startsWith("saving-") ? "saving" : v.id === "latency-vs-passthrough" ? "latency" : v.id;
    if (seen.has(kind)) continue;
    seen.add(kind);
    if (kind === "latency") {
      const g = r.overhead?.targets.find((t) => t.target === "gateway");
      const p = r.overhead?.targets.find((t) => t.target === "passthrough");
      const gDev = r.overhead?.targets.find((t) => t.target === "gateway via wrangler dev");
      out.push(
        `**Added latency (${v.value}).** The bare pass-through Worker, on the same workerd and the same path (client -> the Worker's workerd -> one fetch to the engine), ` +
          `adds ${f(p?.addedP50Ms)} ms p50: that much is what any Worker costs here, before the gateway does anything. The gateway's own share is ` +
          `${f((g?.addedP50Ms ?? NaN) - (p?.addedP50Ms ?? NaN))} ms. (Through wrangler dev's public port, which adds its proxy workerd, the gateway adds ${f(gDev?.addedP50Ms)} ms.) ` +
          `CPU per request in the Worker's workerd: gateway ${f(gwCpu?.cpuMsPerRequest, 3)} ms, pass-through ${f(ptCpu?.cpuMsPerRequest, 3)} ms. ` +
          `The gateway isolate's profile under that load: ${split(gwProf)}; by module ${topModules(gwProf)}. The pass-through's: ${split(ptProf)} (${topModules(ptProf)}).`,
      );
    } else if (kind === "vs-passthrough" || kind === "vs-portkey" || kind === "cpu") {
      if (seen.has("cpu-like")) continue;
      seen.add("cpu-like");
      const fn = gwProf?.summary.topFunctions.slice(0, 6).map((x) => `\`${x.name}\` (${x.module}) ${x.pct.toFixed(1)}%`).join(", ") ?? "(no profile)";
      out.push(
        `**Throughput and CPU (${missed.filter((m) => ["vs-passthrough", "vs-portkey", "cpu"].includes(m.id)).map((m) => `${m.figure}: ${m.value}`).join("; ")}).** ` +
          `At ${r.overhead?.connections ?? 32} connections on ${r.machine.nproc} cores the targets are CPU-bound (the sim, the load generator and the target share the cores), so throughput follows CPU per request: ` +
          `gateway ${f(gwCpu?.cpuMsPerRequest, 3)} ms, pass-through ${f(ptCpu?.cpuMsPerRequest, 3)} ms (both the Worker's workerd), Portkey ${f(pkCpu?.cpuMsPerRequest, 3)} ms (node). ` +
          `The gateway's profile under the non-streamed load: ${split(gwProf)}; by module ${topModules(gwProf, 6)}; top functions ${fn}. ` +
          `The pass-through's profile: ${split(ptProf)} (${topModules(ptProf)}), so the runtime's fixed cost per proxied request is most of a bare Worker's CPU. Portkey's: ${split(pkProf)} (${topModules(pkProf)}).`,
      );
    } else if (kind === "ratio-sse" || kind === "ratio-sse-native" || kind === "ratio-connect") {
      if (seen.has("ratio-chunk")) continue;
      seen.add("ratio-chunk");
      out.push(perChunkExplanation(r, missed));
    } else if (kind === "saving") {
      const rows = missed.filter((m) => m.id.startsWith("saving-")).map((m) => `${m.figure}: ${m.value}`).join("; ");
      out.push(
        `**Fan-out saving (${rows}).** The saving is measured as the TTFT difference of two gateway requests, so it also carries the gateway's ` +
          `extra work for the forced leg (a second engine request, its body and response) and the noise of the engine's timers; the prefill leg alone is timed straight at the prefill engine. ` +
          `See the fan-out table for TTFT and total latency per mode.`,
      );
    } else if (kind === "zero-prefill") {
      const hdr = [...new Set((r.fanout?.cells ?? []).filter((c) => c.mode === "fanout-skip").flatMap((c) => c.pdPrefill))].join(", ");
      out.push(`**Prefill work with fan-out (${v.value}).** The x-pd-prefill headers seen with the predicate on were: ${hdr}.`);
    }
  }
  return out;
}

/** Why a per-chunk target is missed: the gateway's relays next to the floor of their shape. */
function perChunkExplanation(r: BenchResult, missed: Verdict[]): string {
  const x = (v: number | undefined) => `${f(v)}x`;
  const fl = (stream: FloorStream, shape: keyof typeof FLOOR_CASES) => floorRatio(r, stream, shape);
  const sse = ratioExact(r, "256-token SSE stream", "chunk");
  const native = cpuOf(r, "256-token SSE stream, sse_relay native", "gateway")?.cpuMsPerChunk;
  const ptSse = r.cpu?.find((c) => c.case === "256-token SSE stream" && c.target === "passthrough")?.cpuMsPerChunk;
  const connect = ratioExact(r, "256-token Connect stream", "chunk");
  const over = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? `${f(a / b)}x` : "n/a");
  return (
    `**Per-chunk relay cost (${missed.filter((m) => m.id.startsWith("ratio-sse") || m.id === "ratio-connect").map((m) => `${m.figure}: ${m.value}`).join("; ")}).** ` +
    "What workerd charges a relay of each shape bounds these figures from below. A bare Worker that does nothing per chunk but relay it " +
    "(bench/relay-floor-worker, measured in this run on the same streams) costs, per chunk, over the pass-through Worker: " +
    `a read loop into an IdentityTransformStream (the inspecting SSE relay's shape) ${x(fl("256-token SSE stream", "loop"))} on SSE and ${x(fl("256-token Connect stream", "loop"))} on Connect; ` +
    `tee() with one branch read in JS ${x(fl("256-token SSE stream", "tee"))} on SSE (cheaper, but the client's branch cannot be held back or rewritten, so an engine's in-band error would reach the client as the engine wrote it); ` +
    `a JS-pulled ReadableStream body (the shape a streamed Generate's early head needs, so that a client leaving during prefill is seen: api/engine/early-head.ts) ${x(fl("256-token Connect stream", "pull"))} on Connect; ` +
    `the native relays' shape, tee() with one branch piped natively and the other read in 50 ms batches (api/native-relay.ts, api/engine/native-tail.ts), ${x(fl("256-token SSE stream", "teepipe"))} on SSE and ${x(fl("256-token Connect stream", "teepipe"))} on Connect, against ${x(fl("256-token SSE stream", "pipe"))} for the same pipe with no copy: ` +
    "watching a tee()d copy at all costs the runtime's tee work per chunk, however seldom the copy is read. " +
    `The gateway's inspecting SSE relay is ${x(sse)} (${over(sse, fl("256-token SSE stream", "loop"))} its floor), \`sse_relay: "native"\` ${over(native, ptSse)} (${over(native !== undefined && ptSse ? native / ptSse : undefined, fl("256-token SSE stream", "teepipe"))} its floor), ` +
    `the Connect stream on the default \`generate_relay: "native"\` ${x(connect)} (${over(connect, fl("256-token Connect stream", "teepipe"))} its floor).`
  );
}
