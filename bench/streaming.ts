// Item 3: the streaming relay. A 256-token stream over SSE (OpenAI surface) and over Connect
// server-streaming (VllmEngine surface), through the gateway vs the sim directly (and the
// pass-through Worker / Portkey for scale): time to first byte, time to the first token
// event, and the time per chunk after the first. Unpaced (the engine emits tokens as fast as
// it can, so the relay's own per-chunk cost shows) and paced (the default 2 ms per token).
import { generate } from "./connect.js";
import type { BenchContext } from "./context.js";
import type { Target } from "./http.js";
import { interleaved } from "./load.js";
import { completionBody, M, prompt } from "./setup.js";
import { median, rotated } from "./stats.js";

export interface StreamFigures {
  surface: "sse" | "connect";
  paced: boolean;
  target: string;
  /** Medians over repeats of the per-repeat medians. */
  ttfbMs: number;
  firstTokenMs: number;
  perChunkMs: number;
  totalMs: number;
  chunks: number;
  /** Minus direct (same repeat), median over repeats. */
  addedTtfbMs: number;
  addedFirstTokenMs: number;
  addedPerChunkMs: number;
}

interface One {
  ttfb: number;
  first: number;
  perChunk: number;
  total: number;
  chunks: number;
}

const TOKENS = 256;

function fromEvents(ttfb: number, events: number[], total: number): One {
  const first = events[0] ?? total;
  const last = events[events.length - 1] ?? total;
  return { ttfb, first, perChunk: events.length > 1 ? (last - first) / (events.length - 1) : NaN, total, chunks: events.length };
}

async function sseRuns(targets: Target[], model: string, count: number): Promise<Map<string, One[]>> {
  const spec = { path: "/v1/completions", body: completionBody({ model, maxTokens: TOKENS, stream: true }), sse: true };
  const got = await interleaved(targets, spec, count, 120_000);
  return new Map([...got].map(([k, v]) => [k, v.map((e) => fromEvents(e.firstByteMs, e.events ?? [], e.totalMs))]));
}

async function connectRuns(targets: Target[], model: string, count: number): Promise<Map<string, One[]>> {
  const out = new Map<string, One[]>(targets.map((t) => [t.name, []]));
  for (let i = 0; i < count; i++) {
    for (const t of rotated(targets, i)) {
      const r = await generate(t.base, { text: prompt(8), maxTokens: TOKENS, headers: { "x-model": model } });
      // Connect sends its response headers with the first message: that is the first byte.
      out.get(t.name)!.push(fromEvents(r.headersMs, r.chunks, r.totalMs));
    }
  }
  return out;
}

function summarise(surface: "sse" | "connect", paced: boolean, repeats: Map<string, One[]>[]): StreamFigures[] {
  const names = [...repeats[0]!.keys()];
  const med = (name: string, f: (o: One) => number) => repeats.map((rep) => median(rep.get(name)!.map(f)));
  return names.map((name) => {
    const added = (f: (o: One) => number) => {
      const mine = med(name, f);
      const direct = med("direct", f);
      return median(mine.map((x, i) => x - direct[i]!));
    };
    return {
      surface,
      paced,
      target: name,
      ttfbMs: median(med(name, (o) => o.ttfb)),
      firstTokenMs: median(med(name, (o) => o.first)),
      perChunkMs: median(med(name, (o) => o.perChunk)),
      totalMs: median(med(name, (o) => o.total)),
      chunks: median(med(name, (o) => o.chunks)),
      addedTtfbMs: added((o) => o.ttfb),
      addedFirstTokenMs: added((o) => o.first),
      addedPerChunkMs: added((o) => o.perChunk),
    };
  });
}

export async function measureStreaming(ctx: BenchContext): Promise<StreamFigures[]> {
  const { counts } = ctx;
  const out: StreamFigures[] = [];
  const fast = [ctx.direct("agg0"), ctx.passthrough.target, ctx.gateway.target, ctx.portkey.target];
  const fastConnect = [ctx.direct("agg0"), ctx.passthrough.target, ctx.gateway.target];
  const paced = [ctx.direct("agglat"), ctx.gateway.target];
  await sseRuns(fast, M.agg, 3); // warm-up
  await connectRuns(fastConnect, M.agg, 3);

  const plan: [surface: "sse" | "connect", paced: boolean, run: () => Promise<Map<string, One[]>>][] = [
    ["sse", false, () => sseRuns(fast, M.agg, counts.streams)],
    ["connect", false, () => connectRuns(fastConnect, M.agg, counts.streams)],
    ["sse", true, () => sseRuns(paced, M.aggLat, counts.pacedStreams)],
    ["connect", true, () => connectRuns(paced, M.aggLat, counts.pacedStreams)],
  ];
  for (const [surface, isPaced, run] of plan) {
    const reps: Map<string, One[]>[] = [];
    for (let r = 0; r < counts.repeats; r++) reps.push(await run());
    const figs = summarise(surface, isPaced, reps);
    out.push(...figs);
    const g = figs.find((f) => f.target === "gateway")!;
    ctx.log(`streaming: ${surface}${isPaced ? " paced" : ""}: gateway adds ttfb ${g.addedTtfbMs.toFixed(2)} ms, ${g.addedPerChunkMs.toFixed(4)} ms/chunk (${g.chunks} chunks)`);
  }
  return out;
}
