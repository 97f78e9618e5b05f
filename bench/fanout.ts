// Item 4: the fan-out saving. For 512- and 2048-token prompts with the sim's default latency
// model, n=4 with the predicate on (prefill skipped) vs `x-pd-override: force-prefill`: TTFT,
// total latency and the prefill engine's prompt tokens computed per request (GPU work, from
// its /sim/stats delta). Also n=1 PD vs aggregated, what disaggregation costs. Both surfaces.
import { generate } from "./connect.js";
import type { BenchContext } from "./context.js";
import { getJson, post } from "./http.js";
import { once } from "./load.js";
import { completionBody, M, prompt } from "./setup.js";
import { median, rotated } from "./stats.js";

export interface FanoutCell {
  surface: "openai" | "connect";
  promptTokens: number;
  /** fanout-skip: n=4, predicate on; force-prefill: n=4 with the override; pd-n1 / aggregated-n1. */
  mode: "fanout-skip" | "force-prefill" | "pd-n1" | "aggregated-n1";
  n: number;
  requests: number;
  ttftMs: number;
  totalMs: number;
  /** Prompt tokens the prefill engine computed per request. */
  prefillPromptTokensPerRequest: number;
  /** Prompt tokens the decode (or the aggregated) engine computed per request. */
  decodePromptTokensPerRequest: number;
  /** x-pd-prefill response header values seen. */
  pdPrefill: string[];
}

export interface FanoutResult {
  maxTokens: number;
  /** The prefill leg alone, straight at the prefill engine (max_tokens=1, do_remote_decode). */
  prefillLegMs: Record<string, number>;
  cells: FanoutCell[];
  /** Per surface and prompt size: TTFT(force-prefill) - TTFT(fanout-skip), and the prefill leg. */
  savings: { surface: string; promptTokens: number; ttftSavingMs: number; totalSavingMs: number; prefillLegMs: number; prefillTokensSavedPerRequest: number }[];
}

const MAX_TOKENS = 16;
const SIZES = [512, 2048];
type Mode = FanoutCell["mode"];
const MODES: Mode[] = ["fanout-skip", "force-prefill", "pd-n1", "aggregated-n1"];

interface Sample {
  ttft: number;
  total: number;
  prefillTokens: number;
  decodeTokens: number;
  header: string;
}

async function promptTokens(url: string): Promise<number> {
  return (await getJson<{ promptTokensComputed: number }>(`${url}/sim/stats`)).promptTokensComputed;
}

async function prefillLeg(url: string, tokens: number, salt: string): Promise<number> {
  const body = JSON.stringify({
    model: M.pd,
    prompt: prompt(tokens, salt),
    max_tokens: 1,
    kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
  });
  const ex = await post(`${url}/v1/completions`, body);
  if (ex.status !== 200) throw new Error(`prefill leg: HTTP ${ex.status}`);
  return ex.totalMs;
}

async function one(ctx: BenchContext, surface: "openai" | "connect", mode: Mode, tokens: number, salt: string): Promise<Sample> {
  const model = mode === "aggregated-n1" ? M.aggLat : M.pd;
  const n = mode === "fanout-skip" || mode === "force-prefill" ? 4 : 1;
  const headers: Record<string, string> = mode === "force-prefill" ? { "x-pd-override": "force-prefill" } : {};
  const prefillUrl = ctx.sim.url("plat");
  const decodeUrl = ctx.sim.url(model === M.aggLat ? "agglat" : "dlat");
  const [p0, d0] = await Promise.all([promptTokens(prefillUrl), promptTokens(decodeUrl)]);
  let ttft: number;
  let total: number;
  let header: string;
  if (surface === "openai") {
    const ex = await once(ctx.gateway.target, { path: "/v1/completions", body: completionBody({ model, promptTokens: tokens, maxTokens: MAX_TOKENS, n, stream: true, salt }), headers, sse: true });
    ttft = ex.events?.[0] ?? ex.totalMs;
    total = ex.totalMs;
    header = String(ex.headers["x-pd-prefill"] ?? "-");
  } else {
    const r = await generate(ctx.gateway.target.base, { text: prompt(tokens, salt), maxTokens: MAX_TOKENS, n, headers: { "x-model": model, ...headers } });
    ttft = r.chunks[0] ?? r.totalMs;
    total = r.totalMs;
    header = r.headers.get("x-pd-prefill") ?? "-";
  }
  const [p1, d1] = await Promise.all([promptTokens(prefillUrl), promptTokens(decodeUrl)]);
  return { ttft, total, prefillTokens: model === M.aggLat ? 0 : p1 - p0, decodeTokens: d1 - d0, header };
}

export async function measureFanout(ctx: BenchContext): Promise<FanoutResult> {
  const { counts } = ctx;
  let seq = 0;
  const salt = () => `fan${++seq}x`;
  const cells: FanoutCell[] = [];
  const prefillLegMs: Record<string, number> = {};
  for (const tokens of SIZES) {
    const legs: number[] = [];
    for (let i = 0; i < Math.max(3, counts.fanoutRequests); i++) legs.push(await prefillLeg(ctx.sim.url("plat"), tokens, salt()));
    prefillLegMs[String(tokens)] = median(legs);
  }
  for (const surface of ["openai", "connect"] as const) {
    for (const mode of MODES) await one(ctx, surface, mode, 64, salt()); // warm-up
    for (const tokens of SIZES) {
      const reps = new Map<Mode, Sample[][]>(MODES.map((m) => [m, []]));
      for (let r = 0; r < counts.repeats; r++) {
        const inRepeat = new Map<Mode, Sample[]>(MODES.map((m) => [m, []]));
        for (let i = 0; i < counts.fanoutRequests; i++) {
          for (const mode of rotated(MODES, r + i)) inRepeat.get(mode)!.push(await one(ctx, surface, mode, tokens, salt()));
        }
        for (const m of MODES) reps.get(m)!.push(inRepeat.get(m)!);
      }
      for (const mode of MODES) {
        const rs = reps.get(mode)!;
        const med = (f: (s: Sample) => number) => median(rs.map((rep) => median(rep.map(f))));
        const all = rs.flat();
        cells.push({
          surface,
          promptTokens: tokens,
          mode,
          n: mode === "fanout-skip" || mode === "force-prefill" ? 4 : 1,
          requests: all.length,
          ttftMs: med((s) => s.ttft),
          totalMs: med((s) => s.total),
          prefillPromptTokensPerRequest: all.reduce((a, s) => a + s.prefillTokens, 0) / all.length,
          decodePromptTokensPerRequest: all.reduce((a, s) => a + s.decodeTokens, 0) / all.length,
          pdPrefill: [...new Set(all.map((s) => s.header))],
        });
      }
      const c = (m: Mode) => cells.find((x) => x.surface === surface && x.promptTokens === tokens && x.mode === m)!;
      ctx.log(`fanout: ${surface} ${tokens} tokens: TTFT skip ${c("fanout-skip").ttftMs.toFixed(1)} ms vs force-prefill ${c("force-prefill").ttftMs.toFixed(1)} ms (prefill leg ${prefillLegMs[String(tokens)]!.toFixed(1)} ms); n=1 PD ${c("pd-n1").ttftMs.toFixed(1)} vs aggregated ${c("aggregated-n1").ttftMs.toFixed(1)} ms`);
    }
  }
  const savings = (["openai", "connect"] as const).flatMap((surface) =>
    SIZES.map((tokens) => {
      const c = (m: Mode) => cells.find((x) => x.surface === surface && x.promptTokens === tokens && x.mode === m)!;
      return {
        surface,
        promptTokens: tokens,
        ttftSavingMs: c("force-prefill").ttftMs - c("fanout-skip").ttftMs,
        totalSavingMs: c("force-prefill").totalMs - c("fanout-skip").totalMs,
        prefillLegMs: prefillLegMs[String(tokens)]!,
        prefillTokensSavedPerRequest: c("force-prefill").prefillPromptTokensPerRequest - c("fanout-skip").prefillPromptTokensPerRequest,
      };
    }),
  );
  return { maxTokens: MAX_TOKENS, prefillLegMs, cells, savings };
}
