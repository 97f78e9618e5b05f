// Phase "tokenizer": what the gateway's own tokenization costs on the OpenAI surface over
// VllmEngine engines (ARCHITECTURE decision 12).
//  - bundle load per isolate: GetTokenizer from a sim engine serving the real Qwen3 bundle
//    (fetch + sha256), unzip, parse; the first load also pays the library's module import;
//  - load from the cross-isolate cache: the fast form the first isolate stored (issue 30:
//    checked by its digest, id tables installed, no unzip or JSON.parse of tokenizer.json),
//    then one encode (the first request's). The Cache API read itself is not in this figure
//    (local miniflare's cache is not the edge's);
//  - per-token detokenization: OpenAiResponseBuilder fed one-token stream frames;
//  - CPU per chat request through the gateway (workerd, /proc), tokenized path vs openai-http.
// The first three run in this Node process (same JS, V8 like workerd); the last reuses cpu.ts.
import { create } from "@bufbuild/protobuf";
import { TokenizerBundles } from "../src/backends/tokenizer-bundles.js";
import type { BundlePointer, BundleStore } from "../src/backends/tokenizer-store.js";
import { EngineClients } from "../src/backends/engine-clients.js";
import type { EngineConfig } from "../src/config/schema.js";
import { GenerateResponseSchema } from "../src/gen/vllm_engine_pb.js";
import { OpenAiResponseBuilder } from "../src/tokenizer/openai-frames.js";
import { samplingPlan } from "../src/tokenizer/sampling.js";
import type { BenchContext } from "./context.js";
import { measure, type CpuCase } from "./cpu.js";
import { once } from "./load.js";
import { M } from "./setup.js";
import { percentile } from "./stats.js";

const engines = new EngineClients();

export interface TokenizerFigures {
  bundleZipBytes: number;
  /** First load in the process: module import + GetTokenizer + verify + unzip + parse (each
   *  load figure also has the first request's template compile and prompt encode). */
  firstLoadMs: number;
  /** Median of later loads by fresh per-isolate caches (module already imported). */
  engineLoadMs: { p50: number; max: number; runs: number };
  /** Median load from the shared store's fast form (no GetTokenizer), with a first encode. */
  cacheLoadMs: { p50: number; max: number; runs: number };
  /** Detokenization + SSE chunk building per streamed token, microseconds. */
  detokenizeUsPerToken: number;
  detokenizeTokens: number;
  /** Wall time of the gateway's (workerd) first chat request on a fresh isolate, and the next. */
  workerdFirstMs: number;
  workerdSecondMs: number;
  cpu: CpuCase[];
}

function memoryStore(): BundleStore {
  const pointers = new Map<string, BundlePointer>();
  const zips = new Map<string, Uint8Array>();
  const fastForms = new Map<string, Uint8Array>();
  return {
    pointer: async (m) => pointers.get(m),
    setPointer: async (m, p) => void pointers.set(m, p),
    zip: async (m, s) => zips.get(`${m}/${s}`),
    setZip: async (m, s, z) => void zips.set(`${m}/${s}`, z),
    fastForm: async (s) => fastForms.get(s),
    setFastForm: async (s, b) => void fastForms.set(s, b),
  };
}

async function timedLoads(runs: number, engine: EngineConfig, store: () => BundleStore): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const pending: Promise<unknown>[] = [];
    const t0 = performance.now();
    const t = await new TokenizerBundles({ clientOf: (e) => engines.vllmEngine(e), store }).get({ model: M.qwen3, engines: [engine], waitUntil: (p) => void pending.push(p) });
    // What a first chat request adds besides: its template compiled, its prompt encoded.
    await t.chatTemplate({ hasTools: false });
    t.tokenizer.encode("<|im_start|>user\nhello edge, how are you today?<|im_end|>\n<|im_start|>assistant\n", { addSpecialTokens: false });
    out.push(performance.now() - t0);
    await Promise.allSettled(pending); // the store writes and the second-engine check
  }
  return out;
}

const summary = (xs: number[]) => ({ p50: percentile(xs, 50), max: Math.max(...xs), runs: xs.length });

export async function measureTokenizer(ctx: BenchContext): Promise<TokenizerFigures> {
  const engine: EngineConfig = { name: "q0d", url: ctx.sim.url("q0d"), transport: "connect", labels: {} };
  const noStore = () => ({ ...memoryStore() });
  const [firstLoadMs] = await timedLoads(1, engine, noStore);
  const engineLoads = await timedLoads(5, engine, noStore);
  const shared = memoryStore();
  await timedLoads(1, engine, () => shared);
  const cacheLoads = await timedLoads(5, engine, () => shared);
  const tok = await new TokenizerBundles({ clientOf: (e) => engines.vllmEngine(e), store: () => shared }).get({ model: M.qwen3, engines: [engine], waitUntil: () => {} });
  ctx.log(`tokenizer: first load ${firstLoadMs!.toFixed(0)} ms, engine p50 ${percentile(engineLoads, 50).toFixed(0)} ms, cache p50 ${percentile(cacheLoads, 50).toFixed(0)} ms`);

  // Detokenization: a mixed reply (words, CJK, emoji) streamed one token per frame.
  const ids = tok.tokenizer.encode("The edge gateway detokenizes 你好，世界 😀🎉 incrementally, token by token. ".repeat(40), { addSpecialTokens: false });
  const plan = samplingPlan("chat", { stream: true, stop: ["NEVER-SEEN"] });
  const rounds = 5;
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    const b = new OpenAiResponseBuilder({ api: "chat", id: "x", created: 0, model: M.qwen3 }, plan, tok.tokenizer);
    ids.forEach((id) => b.onFrame(create(GenerateResponseSchema, { response: { case: "chunk", value: { tokenIds: [id], completionTokens: 1, promptTokens: 10 } } })));
  }
  const detokenizeUsPerToken = ((performance.now() - t0) * 1000) / (rounds * ids.length);
  ctx.log(`tokenizer: detokenization ${detokenizeUsPerToken.toFixed(1)} µs/token over ${ids.length} tokens`);

  // CPU per chat request in the gateway's workerd: tokenized (VllmEngine) vs relayed (openai-http).
  const chat = (model: string, maxTokens: number, stream: boolean) =>
    JSON.stringify({ model, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello edge, how are you today?" }], max_tokens: maxTokens, ignore_eos: true, ...(stream ? { stream: true } : {}) });
  const gw = { target: ctx.gateway.target, pid: ctx.gateway.workerPid };
  // One request first: the isolate loads the bundle outside the measured batch. Its wall time
  // (and the next one's) is the workerd figure for a fresh isolate's first chat request.
  let t1 = performance.now();
  await once(gw.target, { path: "/v1/chat/completions", body: chat(M.qwen3, 1, false) }, 1);
  const workerdFirstMs = performance.now() - t1;
  t1 = performance.now();
  await once(gw.target, { path: "/v1/chat/completions", body: chat(M.qwen3, 1, false) }, 1);
  const workerdSecondMs = performance.now() - t1;
  ctx.log(`tokenizer: workerd first chat request ${workerdFirstMs.toFixed(0)} ms, second ${workerdSecondMs.toFixed(0)} ms (wall, sim engines)`);
  const work = (body: string, sse: boolean) => async (t: typeof gw.target) => (await once(t, { path: "/v1/chat/completions", body, ...(sse ? { sse: true } : {}) }, 16)).events?.length ?? 0;
  const cpu: CpuCase[] = [];
  const n = Math.min(ctx.counts.cpuRequests, 400);
  cpu.push(await measure(ctx, "chat, PD n=1, 4 tokens: gateway tokenizes (VllmEngine)", gw, work(chat(M.qwen3, 4, false), false), n));
  cpu.push(await measure(ctx, "chat, PD n=1, 4 tokens: relayed (openai-http)", gw, work(chat(M.pd0, 4, false), false), n));
  cpu.push(await measure(ctx, "chat SSE, PD n=1, 64 tokens: gateway tokenizes (VllmEngine)", gw, work(chat(M.qwen3, 64, true), true), ctx.counts.cpuStreamRequests));
  cpu.push(await measure(ctx, "chat SSE, PD n=1, 64 tokens: relayed (openai-http)", gw, work(chat(M.pd0, 64, true), true), ctx.counts.cpuStreamRequests));
  return {
    bundleZipBytes: tok ? (await shared.zip(M.qwen3, tok.sha256))?.byteLength ?? 0 : 0,
    firstLoadMs: firstLoadMs!,
    engineLoadMs: summary(engineLoads),
    cacheLoadMs: summary(cacheLoads),
    detokenizeUsPerToken,
    detokenizeTokens: ids.length,
    workerdFirstMs,
    workerdSecondMs,
    cpu,
  };
}
