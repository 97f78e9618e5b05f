// `npm run bench:faults` (issue 15): the attack and failure scenarios against the real gateway
// in workerd (started by `wrangler dev` from the work tree, addressed at the Worker's own
// workerd socket as bench/load-test.ts does) and simulated NIXL PD clusters in their own Node
// processes. Every scenario gets its own engines (a fresh prefill engine and two decode
// engines), so its counters start at zero. Per scenario it reports: client-visible errors by
// code, prefill runs per client request (prefill `generateRequests` / client requests),
// handoffs left to expire (leases expired + handoffs still pinned), blocks pinned 2 s after
// the last request, and engine requests left open; for the Abort flood, another tenant's
// Generate latency with and without the flood; for a hung prefill engine (issue 32, its own
// gateway with a short deadline), how long its clients waited, how often each hung engine was
// tried per request, and another tenant's latency on the same isolate beside it; for
// issue 32's tokenizer bomb and big SSE event (faults-dos.ts), the same for an attacker's requests.
// Bounded in count and time (< 4 min in all); only 127.0.0.1 is contacted. Writes
// bench/results/faults.json, the "Faults" section of docs/benchmarks.md and the measured
// figures in docs/operations.md ("KV handoffs per failure"). Targets are reported, never tuned.
//   npm run bench:faults -- --only 4,5   only the scenarios whose ids start with 4 or 5 (results
//   to a temp file, docs left alone)
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { startWranglerDev, type WranglerDev } from "../scripts/wrangler-dev.js";
import type { ClusterSpec, EngineSpec, EngineStats } from "../sim/types.js";
import { GenerateRequestSchema } from "../src/gen/vllm_engine_pb.js";
import { installSignalHandlers, onCleanup, runCleanups } from "./cleanup.js";
import { engineClient } from "./connect.js";
import { dosModels, dosScenarios, startDosSims } from "./faults-dos.js";
import { agentFor, destroyAgents, post } from "./http.js";
import { CpuMeter, machineBusyCores } from "./proc.js";
import { prompt } from "./setup.js";
import { median, percentile, round } from "./stats.js";
import { entryPort, startSim, type SimProcess } from "./targets.js";

/** `--only 2,5`: run the scenarios whose ids start with these (results go to a temp file). */
const onlyAt = process.argv.indexOf("--only");
const ONLY = onlyAt >= 0 ? (process.argv[onlyAt + 1] ?? "").split(",").filter(Boolean) : undefined;

const KEY_A = "bench-faults-key-a"; // the Abort flooder
const KEY_B = "bench-faults-key-b"; // the other tenant
const KEY_C = "bench-faults-key-c"; // every other scenario
const PROMPT_TOKENS = 64;
const MAX_TOKENS = 16;
/** Context window of the sim (vLLM's max_model_len there): prompt + max_tokens above it is refused. */
const SIM_CONTEXT = 32_768;
const SETTLE_MS = 2_000;
const BURST = 300;
/** Slow decode tokens in the kill scenario, so streams are still open when the engine dies. */
const KILL_TOKEN_MS = 20;
/** Kill the decode engine once it is running this many streams. */
const KILL_WHEN_RUNNING = 20;
const FLOOD_SECONDS = 6;
const FLOOD_MAX_CALLS = 5_000;
const FLOOD_CONCURRENCY = 8;
const TENANT_CONCURRENCY = 4;
const TENANT_MAX_REQUESTS = 1_000;
const ABORT_IDS_PER_CALL = 64;

interface EngineRef {
  name: string;
  sim: SimProcess;
  role: "prefill" | "decode";
}

export interface Outcome {
  ok: number;
  /** error kind -> count: `HTTP <status> <code>` (OpenAI), `<Connect code> <gateway code>`, ... */
  errors: Record<string, number>;
  /** Client requests sent. */
  requests: number;
  samples: number[];
  ttfts: number[];
}

function newOutcome(): Outcome {
  return { ok: 0, errors: {}, requests: 0, samples: [], ttfts: [] };
}

function noteError(o: Outcome, kind: string): void {
  o.errors[kind] = (o.errors[kind] ?? 0) + 1;
}

const nixl = (name: string, role: "prefill" | "decode", extra: Partial<EngineSpec> = {}): EngineSpec => ({
  name, role, kvConnector: "NixlConnector", kvEngineId: name, model: `m-${name}`, keepAliveTimeoutMs: 905_000, ...extra,
});

async function statsOf(e: EngineRef): Promise<EngineStats | undefined> {
  try {
    const res = await fetch(`${e.sim.url(e.name)}/sim/stats`, { signal: AbortSignal.timeout(5_000) });
    return (await res.json()) as EngineStats;
  } catch {
    return undefined; // the engine is down (killed on purpose)
  }
}

async function setFaults(e: EngineRef, faults: unknown): Promise<void> {
  const res = await fetch(`${e.sim.url(e.name)}/sim/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(faults) });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`POST ${e.name}/sim/faults: HTTP ${res.status}`);
}

// ---- clients ---------------------------------------------------------------------------

async function openaiCompletion(base: string, model: string, o: Outcome, opts: { maxTokens?: number; stream?: boolean; salt: string; key?: string }): Promise<void> {
  o.requests++;
  const t0 = performance.now();
  try {
    const ex = await post(`${base}/v1/completions`, JSON.stringify({
      model,
      prompt: prompt(PROMPT_TOKENS, opts.salt),
      max_tokens: opts.maxTokens ?? MAX_TOKENS,
      ignore_eos: true,
      ...(opts.stream ? { stream: true } : {}),
    }), {
      agent: agentFor("faults-openai", BURST + 16),
      headers: { authorization: `Bearer ${opts.key ?? KEY_C}` },
      keepBody: true,
      sse: opts.stream ?? false,
      timeoutMs: 60_000,
    });
    const body = ex.body ?? "";
    if (ex.status !== 200) {
      let code = String(ex.headers["x-gateway-error-code"] ?? "");
      if (!code) {
        try {
          code = String((JSON.parse(body) as { error?: { code?: unknown } }).error?.code ?? "");
        } catch {
          code = "non-json";
        }
      }
      noteError(o, `HTTP ${ex.status} ${code}`);
      return;
    }
    if (opts.stream) {
      const err = /"error"\s*:\s*\{[^}]*"code"\s*:\s*"?([\w-]+)/.exec(body);
      if (err) return noteError(o, `HTTP 200, SSE error event ${err[1]}`);
      if (!body.includes("data: [DONE]")) return noteError(o, "HTTP 200, stream cut (no [DONE])");
      o.ttfts.push(ex.events?.[0] ?? ex.totalMs);
    }
    o.ok++;
    o.samples.push(performance.now() - t0);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    noteError(o, `client: ${e.code ?? (e.message ?? String(err)).slice(0, 60)}`);
  }
}

async function connectGenerate(base: string, model: string, o: Outcome, opts: { salt: string; key?: string; requestId?: string; maxTokens?: number }): Promise<void> {
  o.requests++;
  const maxTokens = opts.maxTokens ?? MAX_TOKENS;
  const req = create(GenerateRequestSchema, {
    ...(opts.requestId ? { requestId: opts.requestId } : {}),
    input: { case: "text", value: prompt(PROMPT_TOKENS, opts.salt) },
    samplingParams: { maxTokens, ignoreEos: true, n: 1 },
    stream: true,
  });
  const t0 = performance.now();
  let ttft: number | undefined;
  let finish = "";
  let tokens = 0;
  try {
    for await (const res of engineClient(base, true).generate(req, { headers: { "x-model": model, authorization: `Bearer ${opts.key ?? KEY_C}` }, timeoutMs: 60_000 })) {
      // Streamed (DELTA): each chunk counts its own tokens; the complete repeats the last delta.
      if (res.response.case === "chunk") {
        ttft ??= performance.now() - t0;
        tokens += res.response.value.tokenIds.length;
      } else if (res.response.case === "complete") {
        finish = res.response.value.finishReason;
      }
    }
    if (finish === "abort") return noteError(o, "finished with finish_reason abort");
    if (tokens !== maxTokens) return noteError(o, `finished short (${tokens} of ${maxTokens} tokens, ${finish || "no complete"})`);
    o.ok++;
    o.samples.push(performance.now() - t0);
    if (ttft !== undefined) o.ttfts.push(ttft);
  } catch (err) {
    if (err instanceof ConnectError) noteError(o, `${Code[err.code]} ${err.metadata.get("x-gateway-error-code") ?? ""}`.trim());
    else noteError(o, `client: ${String(err).slice(0, 60)}`);
  }
}

/** `count` requests, `width` at a time, each stopped by the deadline (bounded in both). */
async function pool(count: number, width: number, deadlineMs: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const stopAt = performance.now() + deadlineMs;
  const lane = async () => {
    while (next < count && performance.now() < stopAt) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane));
}

// ---- scenarios -------------------------------------------------------------------------

interface ScenarioResult {
  id: string;
  title: string;
  surface: string;
  setup: string;
  clientRequests: number;
  ok: number;
  errors: Record<string, number>;
  /** Prefill engine generateRequests / client requests. */
  prefillRunsPerRequest: number;
  prefillGenerateRequests: number;
  decodeGenerateRequests: Record<string, number | null>;
  kvPullsCompleted: number;
  transfersRejected: number;
  leasesExpired: number;
  handoffsPinnedAfter: number;
  handoffsLeftToExpire: number;
  blocksPinnedAfter: number;
  engineRequestsOpenAfter: number;
  connectionsDropped: number;
  abortsReceived: number;
  abortsIgnored: number;
  /** True where another decode engine was available to take over. */
  failoverPossible: boolean;
  expectations: { target: string; met: boolean; figure: string }[];
  notes: string[];
  flood?: FloodFigures;
  /** wrangler dev's log over the scenario: warnings and errors, grouped (digits folded). */
  gatewayWarnings?: { count: number; first: string }[];
}

function warnings(text: string): { count: number; first: string }[] {
  const kinds = new Map<string, { count: number; first: string }>();
  for (const raw of text.replace(/\x1b\[[0-9;]*m/g, "").split("\n")) {
    const line = raw.trim();
    if (!/warn|error|fail|broken/i.test(line) || /Request\.cf|ENOTFOUND|Scheduled Workers/.test(line)) continue;
    const kind = line.replace(/"requestId":"[^"]*"|"url":"[^"]*"|\d+/g, "#").slice(0, 200);
    const k = kinds.get(kind);
    if (k) k.count++;
    else kinds.set(kind, { count: 1, first: line.slice(0, 600) });
  }
  return [...kinds.values()].sort((a, b) => b.count - a.count).slice(0, 12);
}

interface FloodFigures {
  baseline: LatencyFigures;
  underFlood: LatencyFigures;
  aloneAfter: LatencyFigures;
  /** Key B under a control flood of the same width from key A: GET /v1/models, the cheapest
   *  data-plane request (the same middleware: auth, limits, rate limiting), so what any flood
   *  of A's requests costs here apart from Abort handling. */
  underControl: LatencyFigures;
  controlCalls: number;
  /** CPU ms of the gateway's workerd and the sim process over the alone and the flood phases. */
  cpu: { alone: Record<string, number>; flood: Record<string, number> };
  abortCalls: number;
  abortCallErrors: Record<string, number>;
  abortCallP50Ms: number;
  idsPerCall: number;
  /** Abort RPCs the engines received during the flood (the gateway's fan-out). */
  engineAbortRpcs: number;
  tenantAborted: number;
}

interface LatencyFigures {
  requests: number;
  ok: number;
  errors: Record<string, number>;
  totalP50Ms: number;
  totalP99Ms: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
}

function latency(o: Outcome): LatencyFigures {
  return {
    requests: o.requests, ok: o.ok, errors: o.errors,
    totalP50Ms: round(percentile(o.samples, 50), 1), totalP99Ms: round(percentile(o.samples, 99), 1),
    ttftP50Ms: round(percentile(o.ttfts, 50), 1), ttftP99Ms: round(percentile(o.ttfts, 99), 1),
  };
}

interface Scenario {
  id: string;
  title: string;
  surface: string;
  setup: string;
  prefill: EngineRef;
  decode: EngineRef[];
  failoverPossible: boolean;
  /** `4xx`: a rejection the client must see as 4xx / InvalidArgument; `none`: any client-visible
   *  error is a miss; `report`: errors are inherent to the failure (streams cut mid-way) and
   *  only reported. */
  errorTarget: "4xx" | "none" | "report";
  run(): Promise<{ outcome: Outcome; notes?: string[]; flood?: FloodFigures; expectations?: Expectation[] }>;
}

/** A target a scenario checks itself, beside the common ones finish() checks. */
interface Expectation {
  target: string;
  met: boolean;
  figure: string;
}

async function finish(s: Scenario, outcome: Outcome, notes: string[], flood: FloodFigures | undefined, log: (m: string) => void, extra: ScenarioResult["expectations"] = []): Promise<ScenarioResult> {
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const p = (await statsOf(s.prefill))!;
  const ds = await Promise.all(s.decode.map(async (d) => [d.name, await statsOf(d)] as const));
  const live = [p, ...ds.map(([, st]) => st).filter((x): x is EngineStats => x !== undefined)];
  const sum = (f: (e: EngineStats) => number) => live.reduce((n, e) => n + f(e), 0);
  const handoffsLeft = p.leasesExpired + p.handoffsPinned;
  const r: ScenarioResult = {
    id: s.id, title: s.title, surface: s.surface, setup: s.setup,
    clientRequests: outcome.requests, ok: outcome.ok, errors: outcome.errors,
    prefillGenerateRequests: p.generateRequests,
    prefillRunsPerRequest: round(p.generateRequests / Math.max(1, outcome.requests), 3),
    decodeGenerateRequests: Object.fromEntries(ds.map(([n, st]) => [n, st?.generateRequests ?? null])),
    kvPullsCompleted: sum((e) => e.kvPullsCompleted ?? 0),
    transfersRejected: p.transfersRejected,
    leasesExpired: p.leasesExpired,
    handoffsPinnedAfter: p.handoffsPinned,
    handoffsLeftToExpire: handoffsLeft,
    blocksPinnedAfter: sum((e) => e.blocksPinned),
    engineRequestsOpenAfter: sum((e) => e.activeRequests),
    connectionsDropped: sum((e) => (e as { connectionsDropped?: number }).connectionsDropped ?? 0),
    abortsReceived: sum((e) => e.abortsReceived),
    abortsIgnored: sum((e) => e.abortsIgnored),
    failoverPossible: s.failoverPossible,
    expectations: [],
    notes,
    ...(flood ? { flood } : {}),
  };
  const ex = r.expectations;
  ex.push(...extra);
  ex.push({ target: "1 prefill run per client request", met: r.prefillRunsPerRequest <= 1, figure: String(r.prefillRunsPerRequest) });
  if (s.failoverPossible) ex.push({ target: "0 handoffs left to expire (another decode engine was available)", met: handoffsLeft === 0, figure: String(handoffsLeft) });
  ex.push({ target: "0 engine requests left open", met: r.engineRequestsOpenAfter === 0, figure: String(r.engineRequestsOpenAfter) });
  const errorCount = Object.values(r.errors).reduce((a, b) => a + b, 0);
  if (s.errorTarget === "4xx") ex.push({ target: "client errors are 4xx / InvalidArgument", met: Object.keys(r.errors).every((k) => /^HTTP 4\d\d|^InvalidArgument/.test(k)) && r.ok === 0, figure: JSON.stringify(r.errors) });
  else if (s.errorTarget === "none" && !flood) ex.push({ target: "no client-visible errors", met: errorCount === 0, figure: String(errorCount) });
  if (flood) {
    // Baseline: the worse of the two "alone" runs around the flood (the machine is shared).
    const p50 = Math.max(flood.baseline.totalP50Ms, flood.aloneAfter.totalP50Ms);
    const p99 = Math.max(flood.baseline.totalP99Ms, flood.aloneAfter.totalP99Ms);
    const slower = flood.underFlood.totalP50Ms / p50;
    ex.push({ target: "the other tenant's Generate p50 within 1.5x of alone", met: slower <= 1.5, figure: `${p50} -> ${flood.underFlood.totalP50Ms} ms (${round(slower, 2)}x; under the control flood of GET /v1/models ${round(flood.underControl.totalP50Ms / p50, 2)}x)` });
    ex.push({ target: "the other tenant's Generate p99 within 2x of alone", met: flood.underFlood.totalP99Ms / p99 <= 2, figure: `${p99} -> ${flood.underFlood.totalP99Ms} ms (${round(flood.underFlood.totalP99Ms / p99, 2)}x)` });
    ex.push({ target: "none of the other tenant's requests aborted", met: flood.tenantAborted === 0, figure: String(flood.tenantAborted) });
    ex.push({ target: "no errors for the other tenant", met: [flood.baseline, flood.underFlood, flood.aloneAfter].every((l) => Object.keys(l.errors).length === 0), figure: JSON.stringify({ ...flood.baseline.errors, ...flood.underFlood.errors, ...flood.aloneAfter.errors }) });
  }
  log(`${s.id}: ${r.clientRequests} requests, ${r.ok} ok, errors ${JSON.stringify(r.errors)}; prefill runs/request ${r.prefillRunsPerRequest}; handoffs left to expire ${handoffsLeft} (pinned ${r.handoffsPinnedAfter}, expired ${r.leasesExpired}); blocks pinned after 2 s ${r.blocksPinnedAfter}; engine requests open ${r.engineRequestsOpenAfter}; decode generate ${JSON.stringify(r.decodeGenerateRequests)}; pulls ${r.kvPullsCompleted}, rejected ${r.transfersRejected}`);
  for (const e of ex) log(`${s.id}:   ${e.met ? "met   " : "MISSED"} ${e.target}: ${e.figure}`);
  return r;
}

async function main(): Promise<void> {
  installSignalHandlers();
  const t0 = performance.now();
  const log = (msg: string) => {
    const s = Math.round((performance.now() - t0) / 1000);
    console.log(`[${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}] ${msg}`);
  };
  // Other work on the shared machine skews the latencies: wait (bounded) for it to calm down.
  let busyBefore = await machineBusyCores(1_000);
  for (let waited = 0; busyBefore > 0.5 && waited < 4; waited++) {
    log(`faults: ${busyBefore.toFixed(2)} cores busy with other work; waiting up to 20 s for it to calm down`);
    busyBefore = await machineBusyCores(5_000);
  }
  log(`faults: ${os.cpus().length} cores, ${busyBefore.toFixed(2)} busy with other work before the run`);
  const tmp = await mkdtemp(join(tmpdir(), "vllm-edge-faults-"));
  onCleanup("tmp", () => rm(tmp, { recursive: true, force: true }));
  await mkdir(join(tmp, "main"));
  await mkdir(join(tmp, "victim"));

  // One prefill engine and two decode engines per scenario. s2b (the decode engine that is
  // killed) runs in its own sim process, so it can be killed for real (SIGKILL).
  const slow = { latency: { perPromptTokenMs: 0.05, perOutputTokenMs: KILL_TOKEN_MS, perBlockPullMs: 0.01, pullSetupMs: 2 } };
  const mainSpec: ClusterSpec = {
    recentRequests: 1,
    engines: [
      nixl("s1p", "prefill"), nixl("s1a", "decode", { model: "m-s1p" }), nixl("s1b", "decode", { model: "m-s1p" }),
      nixl("s2p", "prefill", slow), nixl("s2a", "decode", { model: "m-s2p", ...slow }),
      nixl("s3p", "prefill"), nixl("s3a", "decode", { model: "m-s3p" }), nixl("s3b", "decode", { model: "m-s3p" }),
      nixl("s4p", "prefill"), nixl("s4a", "decode", { model: "m-s4p" }), nixl("s4b", "decode", { model: "m-s4p" }),
      nixl("s5p", "prefill"), nixl("s5a", "decode", { model: "m-s5p" }), nixl("s5b", "decode", { model: "m-s5p" }),
    ],
  };
  const sim = await startSim(mainSpec, join(tmp, "main"));
  const victim = await startSim({ recentRequests: 1, engines: [nixl("s2b", "decode", { model: "m-s2p", ...slow })] }, join(tmp, "victim"));
  const dosSims = await startDosSims(tmp); // issue 32: their own engines (bench/faults-dos.ts)
  const ref = (name: string, role: "prefill" | "decode", s = sim): EngineRef => ({ name, role, sim: s });

  const entries = (e: EngineRef, prefill: boolean) => [
    { name: `${e.name}-http`, url: e.sim.url(e.name), transport: "openai-http", ...(prefill ? { kv_connector: "NixlConnector" } : {}) },
    { name: `${e.name}-connect`, url: e.sim.url(e.name), transport: "connect" },
  ];
  const model = (p: EngineRef, ds: EngineRef[]) => ({ prefill: entries(p, true), decode: ds.flatMap((d) => entries(d, false)) });
  const S = {
    s1: { p: ref("s1p", "prefill"), d: [ref("s1a", "decode"), ref("s1b", "decode")] },
    s2: { p: ref("s2p", "prefill"), d: [ref("s2a", "decode"), ref("s2b", "decode", victim)] },
    s3: { p: ref("s3p", "prefill"), d: [ref("s3a", "decode"), ref("s3b", "decode")] },
    s4: { p: ref("s4p", "prefill"), d: [ref("s4a", "decode"), ref("s4b", "decode")] },
    s5: { p: ref("s5p", "prefill"), d: [ref("s5a", "decode"), ref("s5b", "decode")] },
  };
  const config = {
    auth: { data_plane: "api_keys" },
    limits: { max_n: 16 },
    models: { ...Object.fromEntries(Object.entries(S).map(([k, v]) => [`m-${k}p`, model(v.p, v.d)])), ...dosModels(dosSims) },
  };
  log("faults: sim clusters up; starting the gateway (wrangler dev, data-plane API keys)");
  const gw: WranglerDev = await startWranglerDev(config, 120_000, { vars: { API_KEYS: [KEY_A, KEY_B, KEY_C].join(","), DEV_METRICS: "off" } });
  onCleanup("wrangler dev", () => gw.stop());
  const workerPid = gw.workerd().worker;
  const base = workerPid === undefined ? gw.url : `http://127.0.0.1:${await entryPort(workerPid, "/health")}`;
  log(`faults: gateway at ${base} (the Worker's own workerd socket, pid ${workerPid ?? "?"}), ready in ${gw.readyMs.toFixed(0)} ms`);
  // Warm the isolate (config parse, discovery) on a model no scenario counts.
  let seq = 0;
  const salt = () => `f${++seq}x`;

  const scenarios: Scenario[] = [
    {
      id: "1a-context-exceeded",
      title: "decode rejects: max_tokens above the context window",
      surface: "openai",
      setup: `50 non-streamed completions (${PROMPT_TOKENS}-token prompt, max_tokens ${SIM_CONTEXT}: prompt + max_tokens > the sim's ${SIM_CONTEXT}-token context), 10 at a time`,
      prefill: S.s1.p, decode: S.s1.d, failoverPossible: true, errorTarget: "4xx",
      async run() {
        const o = newOutcome();
        await pool(50, 10, 20_000, () => openaiCompletion(base, "m-s1p", o, { maxTokens: SIM_CONTEXT, salt: salt() }));
        return { outcome: o };
      },
    },
    {
      id: "1b-failstart-invalid-argument",
      title: "decode rejects: failStart invalid_argument on both decode engines",
      surface: "connect",
      setup: "50 streamed Generates, 10 at a time; both decode engines answer every decode-leg request with INVALID_ARGUMENT before any frame",
      prefill: S.s1.p, decode: S.s1.d, failoverPossible: true, errorTarget: "4xx",
      async run() {
        // Fresh counters for this half: the prefill engine is shared with 1a.
        for (const e of [S.s1.p, ...S.s1.d]) await fetch(`${e.sim.url(e.name)}/sim/reset`, { method: "POST" }).then((r) => r.arrayBuffer());
        for (const d of S.s1.d) await setFaults(d, { failStart: { code: "invalid_argument", message: "injected: prompt too long" }, leg: "decode" });
        const o = newOutcome();
        await pool(50, 10, 20_000, () => connectGenerate(base, "m-s1p", o, { salt: salt() }));
        for (const d of S.s1.d) await fetch(`${d.sim.url(d.name)}/sim/faults`, { method: "DELETE" }).then((r) => r.arrayBuffer());
        return { outcome: o };
      },
    },
    {
      id: "2-decode-killed",
      title: `a decode engine killed (SIGKILL) during a ${BURST}-stream burst`,
      surface: "openai",
      setup: `${BURST} SSE streams at once (max_tokens ${32}, ${KILL_TOKEN_MS} ms/token on decode); one of the two decode engines' process is SIGKILLed once it runs ${KILL_WHEN_RUNNING} streams`,
      prefill: S.s2.p, decode: S.s2.d, failoverPossible: true, errorTarget: "report",
      async run() {
        const o = newOutcome();
        const burst = Promise.all(Array.from({ length: BURST }, () => openaiCompletion(base, "m-s2p", o, { maxTokens: 32, stream: true, salt: salt() })));
        // Kill once the victim is running streams (bounded: at most 15 s of waiting).
        let before = await statsOf(S.s2.d[1]!);
        const waitUntil = performance.now() + 15_000;
        while ((before?.activeRequests ?? 0) < KILL_WHEN_RUNNING && performance.now() < waitUntil) {
          await new Promise((r) => setTimeout(r, 25));
          before = await statsOf(S.s2.d[1]!);
        }
        process.kill(victim.pid, "SIGKILL");
        log(`2-decode-killed: killed s2b (pid ${victim.pid}) with ${before?.activeRequests ?? "?"} requests running on it, ${before?.generateRequests ?? "?"} received so far`);
        await burst;
        return { outcome: o, notes: [`s2b had received ${before?.generateRequests ?? "?"} decode requests and was running ${before?.activeRequests ?? "?"} when it was killed; streams it had started cannot be failed over (they had sent tokens)`] };
      },
    },
    ...(["openai", "connect"] as const).map((surface): Scenario => ({
      id: `3-drop-connection-${surface}`,
      title: "decode connection dropped (dropConnection on one of two decode engines)",
      surface,
      setup: "100 non-streamed requests, 10 at a time; one decode engine closes every generation connection without an answer",
      prefill: S.s3.p, decode: S.s3.d, failoverPossible: true, errorTarget: "none",
      async run() {
        for (const e of [S.s3.p, ...S.s3.d]) await fetch(`${e.sim.url(e.name)}/sim/reset`, { method: "POST" }).then((r) => r.arrayBuffer());
        await setFaults(S.s3.d[0]!, { dropConnection: true });
        const o = newOutcome();
        await pool(100, 10, 30_000, () => (surface === "openai" ? openaiCompletion(base, "m-s3p", o, { salt: salt() }) : connectGenerate(base, "m-s3p", o, { salt: salt() })));
        await fetch(`${S.s3.d[0]!.sim.url(S.s3.d[0]!.name)}/sim/faults`, { method: "DELETE" }).then((r) => r.arrayBuffer());
        return { outcome: o };
      },
    })),
    {
      id: "4-truncated-frames",
      title: "truncated decode frames (malformedResponse truncated on one of two decode engines)",
      surface: "connect",
      setup: "50 streamed Generates, 10 at a time; one decode engine answers every Generate with a frame that announces 100 bytes and closes after 3",
      prefill: S.s4.p, decode: S.s4.d, failoverPossible: true, errorTarget: "none",
      async run() {
        await setFaults(S.s4.d[0]!, { malformedResponse: "truncated" });
        const o = newOutcome();
        await pool(50, 10, 30_000, () => connectGenerate(base, "m-s4p", o, { salt: salt() }));
        return { outcome: o };
      },
    },
    {
      id: "5-abort-flood",
      title: "Abort flood: key A floods Abort (64 ids per call) while key B runs Generates",
      surface: "connect",
      setup: `key B: streamed Generates (max_tokens ${MAX_TOKENS}, 2 ms/token), ${TENANT_CONCURRENCY} at a time for ${FLOOD_SECONDS} s, first alone, then while key A sends Abort calls of ${ABORT_IDS_PER_CALL} ids (B's own client request ids around the one B is sending, as if leaked), ${FLOOD_CONCURRENCY} calls at a time (at most ${FLOOD_MAX_CALLS})`,
      prefill: S.s5.p, decode: S.s5.d, failoverPossible: true, errorTarget: "none",
      async run() {
        const tenant = async (tag: string, o: Outcome, ids: { seq: number }) =>
          pool(TENANT_MAX_REQUESTS, TENANT_CONCURRENCY, FLOOD_SECONDS * 1000, () => connectGenerate(base, "m-s5p", o, { salt: salt(), key: KEY_B, requestId: `b-${tag}-${ids.seq++}` }));
        // Warm-up (not counted in the figures below, but in the prefill-run ratio).
        const warm = newOutcome();
        await pool(8, 4, 10_000, (i) => connectGenerate(base, "m-s5p", warm, { salt: salt(), key: KEY_B, requestId: `b-warm-${i}` }));
        const baseline = newOutcome();
        const aloneCpu = new CpuMeter({ workerd: workerPid, sim: sim.pid });
        await tenant("base", baseline, { seq: 0 });
        const aloneCpuMs = aloneCpu.stop();
        const before = await Promise.all([S.s5.p, ...S.s5.d].map(statsOf));
        const floodCpu = new CpuMeter({ workerd: workerPid, sim: sim.pid });
        const under = newOutcome();
        const ids = { seq: 0 };
        let calls = 0;
        const callErrors: Record<string, number> = {};
        const callMs: number[] = [];
        let stop = false;
        const floodLane = async () => {
          while (!stop && calls < FLOOD_MAX_CALLS) {
            calls++;
            const around = ids.seq;
            const requestIds = Array.from({ length: ABORT_IDS_PER_CALL }, (_, k) => `b-flood-${around - 32 + k}`);
            const t = performance.now();
            try {
              await engineClient(base, true).abort({ requestIds }, { headers: { "x-model": "m-s5p", authorization: `Bearer ${KEY_A}` }, timeoutMs: 30_000 });
              callMs.push(performance.now() - t);
            } catch (err) {
              const k = err instanceof ConnectError ? `${Code[err.code]} ${err.metadata.get("x-gateway-error-code") ?? ""}`.trim() : String(err).slice(0, 60);
              callErrors[k] = (callErrors[k] ?? 0) + 1;
            }
          }
        };
        const flooders = Array.from({ length: FLOOD_CONCURRENCY }, floodLane);
        await tenant("flood", under, ids);
        stop = true;
        await Promise.all(flooders);
        const floodCpuMs = floodCpu.stop();
        const after = await Promise.all([S.s5.p, ...S.s5.d].map(statsOf));
        // The control: the same width of flood from key A, of GET /v1/models.
        const control = newOutcome();
        let controlCalls = 0;
        let controlStop = false;
        const controlLane = async () => {
          while (!controlStop && controlCalls < FLOOD_MAX_CALLS) {
            controlCalls++;
            await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${KEY_A}` } }).then((r) => r.arrayBuffer()).catch(() => undefined);
          }
        };
        const controlLanes = Array.from({ length: FLOOD_CONCURRENCY }, controlLane);
        await tenant("control", control, { seq: 0 });
        controlStop = true;
        await Promise.all(controlLanes);
        // Key B alone once more: the machine is shared, so "alone" is bracketed around the flood.
        const again = newOutcome();
        await tenant("again", again, { seq: 0 });
        const engineAbortRpcs = after.reduce((n, e, i) => n + (e?.abortsReceived ?? 0) - (before[i]?.abortsReceived ?? 0), 0);
        const tenantAborted = [baseline, under, control, again].reduce((n, o) => n + (o.errors["finished with finish_reason abort"] ?? 0), 0);
        const all = newOutcome();
        for (const o of [warm, baseline, under, control, again]) {
          all.requests += o.requests;
          all.ok += o.ok;
          for (const [k, v] of Object.entries(o.errors)) all.errors[k] = (all.errors[k] ?? 0) + v;
        }
        const flood: FloodFigures = {
          baseline: latency(baseline), underFlood: latency(under), aloneAfter: latency(again), underControl: latency(control), controlCalls, abortCalls: calls,
          cpu: {
            alone: { wallMs: round(aloneCpuMs.wallMs, 0), ...Object.fromEntries(Object.entries(aloneCpuMs.cpuMs).map(([k, v]) => [k, round(v, 0)])) },
            flood: { wallMs: round(floodCpuMs.wallMs, 0), ...Object.fromEntries(Object.entries(floodCpuMs.cpuMs).map(([k, v]) => [k, round(v, 0)])) },
          }, abortCallErrors: callErrors,
          abortCallP50Ms: round(median(callMs), 1), idsPerCall: ABORT_IDS_PER_CALL, engineAbortRpcs, tenantAborted,
        };
        log(`5-abort-flood: B alone p50/p99 ${flood.baseline.totalP50Ms}/${flood.baseline.totalP99Ms} ms (${baseline.requests} requests); under the flood ${flood.underFlood.totalP50Ms}/${flood.underFlood.totalP99Ms} ms (${under.requests}); alone again ${flood.aloneAfter.totalP50Ms}/${flood.aloneAfter.totalP99Ms} ms (${again.requests}); CPU ms workerd/sim alone ${flood.cpu.alone.workerd}/${flood.cpu.alone.sim}, flood ${flood.cpu.flood.workerd}/${flood.cpu.flood.sim}; A sent ${calls} Abort calls (p50 ${flood.abortCallP50Ms} ms), the engines received ${engineAbortRpcs} Abort RPCs`);
        return { outcome: all, flood };
      },
    },
    hungPrefillScenario(tmp, log, salt),
  ];

  // Issue 32: what an attacker's huge prompts and an engine's huge events cost another tenant.
  for (const d of dosScenarios({ base, workerPid, keyAttacker: KEY_A, keyTenant: KEY_B, log })) {
    scenarios.push({ ...d, prefill: { name: d.engine, role: "prefill", sim: dosSims.attack }, decode: [], failoverPossible: false, errorTarget: "report" });
  }

  const only = ONLY;
  const results: ScenarioResult[] = [];
  const deadline = t0 + 240_000; // issue 32's scenarios (faults-dos.ts) take about a minute more
  for (const s of scenarios) {
    if (only && !only.some((o) => s.id.startsWith(o))) continue;
    if (performance.now() > deadline) {
      log(`${s.id}: skipped (the run's 240 s budget is spent)`);
      continue;
    }
    log(`${s.id}: start (${s.title})`);
    const mark = gw.log().length;
    try {
      const { outcome, notes, flood, expectations } = await s.run();
      const r = await finish(s, outcome, notes ?? [], flood, log, expectations);
      for (const e of expectations ?? []) log(`${s.id}:   ${e.met ? "met   " : "MISSED"} ${e.target}: ${e.figure}`);
      r.gatewayWarnings = warnings(gw.log().slice(mark));
      for (const w of r.gatewayWarnings.slice(0, 5)) log(`${s.id}:   gateway log: ${w.count} × ${w.first.slice(0, 200)}`);
      results.push(r);
    } catch (err) {
      log(`${s.id}: FAILED: ${String((err as Error).stack ?? err).split("\n")[0]}`);
    }
  }
  const busyAfter = await machineBusyCores(1_000);
  destroyAgents();
  await runCleanups();
  const out = {
    date: new Date().toISOString(),
    command: "npm run bench:faults",
    durationS: round((performance.now() - t0) / 1000, 1),
    machine: { cores: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "unknown", busyCoresBefore: round(busyBefore, 2), busyCoresAfterStop: round(busyAfter, 2) },
    gateway: "wrangler dev from the work tree, addressed at the Worker's own workerd socket; auth.data_plane api_keys",
    leaseMs: 30_000,
    settleMs: SETTLE_MS,
    scenarios: results,
  };
  if (only) {
    const file = join(tmpdir(), `vllm-edge-faults-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(out, null, 2) + "\n");
    log(`faults: partial run (--only): results in ${file}; bench/results and docs left alone`);
    process.exit(0);
  }
  await mkdir("bench/results", { recursive: true });
  await writeFile("bench/results/faults.json", JSON.stringify(out, null, 2) + "\n");
  await writeDocs(out);
  const missed = results.flatMap((r) => r.expectations.filter((e) => !e.met).map((e) => `${r.id}: ${e.target} (${e.figure})`));
  log(`faults: wrote bench/results/faults.json, docs/benchmarks.md (Faults), docs/operations.md (KV handoffs per failure); ${missed.length} target(s) missed`);
  for (const m of missed) log(`faults:   missed: ${m}`);
  process.exit(0);
}

// ---- a hung prefill engine (issue 32) ------------------------------------------------------

/** The gateway of scenario 6 runs with these (its own wrangler dev, so no other scenario's
 *  timeouts change): a request's deadline and the prefill leg's timeout. */
const HUNG_DEADLINE_MS = 8_000;
const HUNG_PREFILL_TIMEOUT_MS = 3_000;
/** Requests of key A kept hanging at once, and how long each phase of key B runs. */
const HUNG_CONCURRENCY = 16;
const HUNG_PHASE_SECONDS = 6;

/** Scenario 6: both prefill engines of key A's model hang (they never answer); key B's model,
 *  on other engines, is served by the same isolate meanwhile. Its own sim process and its own
 *  gateway (started in run()), so the other scenarios keep the default timeouts. */
function hungPrefillScenario(tmp: string, log: (m: string) => void, salt: () => string): Scenario {
  let sim: SimProcess | undefined;
  // The engines' process starts in run(): refs resolve their URLs then.
  const lazy: SimProcess = { get pid() { return sim?.pid ?? -1; }, url: (n) => sim!.url(n), grpcUrl: (n) => sim!.grpcUrl(n), stop: async () => sim?.stop() };
  const ref = (name: string, role: "prefill" | "decode"): EngineRef => ({ name, role, sim: lazy });
  const hung = [ref("s6h", "prefill"), ref("s6i", "prefill")];
  return {
    id: "6-hung-prefill",
    title: "both prefill engines of one model hang; another tenant's model is served by the same isolate",
    surface: "openai + connect",
    setup: `key A: ${HUNG_CONCURRENCY} non-streamed OpenAI completions at a time to a model whose two prefill engines (openai-http) never answer, for ${HUNG_PHASE_SECONDS} s; key B: streamed Generates (max_tokens ${MAX_TOKENS}) to another model, ${TENANT_CONCURRENCY} at a time for ${HUNG_PHASE_SECONDS} s, alone, then beside A's hung requests, then alone again. A gateway of its own: retry.deadline_ms ${HUNG_DEADLINE_MS}, pd.prefill_timeout_ms ${HUNG_PREFILL_TIMEOUT_MS}, breaker.failure_threshold 10000 (breakers kept closed, so every request of A hangs)`,
    prefill: hung[0]!, decode: [ref("s6a", "decode")], failoverPossible: false, errorTarget: "report",
    async run() {
      const dir = join(tmp, "hung");
      await mkdir(dir, { recursive: true });
      const hang = { faults: [{ hang: true }] };
      sim = await startSim({
        recentRequests: 5_000,
        engines: [nixl("s6h", "prefill", hang), nixl("s6i", "prefill", { model: "m-s6h", ...hang }), nixl("s6a", "decode", { model: "m-s6h" }), nixl("s6q", "prefill"), nixl("s6b", "decode", { model: "m-s6q" })],
      }, dir);
      const http = (name: string, prefill: boolean) => ({ name, url: sim!.url(name), transport: "openai-http", ...(prefill ? { kv_connector: "NixlConnector" } : {}) });
      const connect = (name: string) => ({ name, url: sim!.url(name), transport: "connect" });
      const gw = await startWranglerDev({
        auth: { data_plane: "api_keys" },
        pd: { prefill_timeout_ms: HUNG_PREFILL_TIMEOUT_MS },
        retry: { deadline_ms: HUNG_DEADLINE_MS },
        breaker: { failure_threshold: 10_000 },
        models: { "m-s6h": { prefill: [http("s6h", true), http("s6i", true)], decode: [http("s6a", false)] }, "m-s6q": { prefill: [connect("s6q")], decode: [connect("s6b")] } },
      }, 120_000, { vars: { API_KEYS: [KEY_A, KEY_B].join(","), DEV_METRICS: "off" } });
      onCleanup("wrangler dev (hung prefill)", () => gw.stop());
      try {
        const pid = gw.workerd().worker;
        const base = pid === undefined ? gw.url : `http://127.0.0.1:${await entryPort(pid, "/health")}`;
        const tenant = (o: Outcome) => pool(TENANT_MAX_REQUESTS, TENANT_CONCURRENCY, HUNG_PHASE_SECONDS * 1000, () => connectGenerate(base, "m-s6q", o, { salt: salt(), key: KEY_B }));
        await pool(8, 4, 10_000, () => connectGenerate(base, "m-s6q", newOutcome(), { salt: salt(), key: KEY_B })); // warm-up
        const alone = newOutcome();
        await tenant(alone);
        const hungA = { stop: false, seq: 0, answers: [] as { ms: number; kind: string }[] };
        const lane = async () => {
          while (!hungA.stop) hungA.answers.push(await hungCompletion(base, `hung${hungA.seq++}x`, salt()));
        };
        const lanes = Array.from({ length: HUNG_CONCURRENCY }, lane);
        await new Promise((r) => setTimeout(r, HUNG_PREFILL_TIMEOUT_MS / 2)); // A's requests are hanging now
        const beside = newOutcome();
        await tenant(beside);
        hungA.stop = true;
        await Promise.all(lanes);
        const again = newOutcome();
        await tenant(again);
        return hungFigures(hung, hungA.answers, { alone, beside, again });
      } finally {
        await gw.stop();
      }
    },
  };
}

/** One of key A's requests to the hung model: how long until its answer, and what it was. */
async function hungCompletion(base: string, requestId: string, salt: string): Promise<{ ms: number; kind: string }> {
  const t0 = performance.now();
  try {
    const ex = await post(`${base}/v1/completions`, JSON.stringify({ model: "m-s6h", prompt: prompt(PROMPT_TOKENS, salt), max_tokens: MAX_TOKENS }), {
      agent: agentFor("faults-hung", HUNG_CONCURRENCY + 4),
      headers: { authorization: `Bearer ${KEY_A}`, "x-request-id": requestId },
      timeoutMs: 5 * HUNG_DEADLINE_MS,
    });
    return { ms: performance.now() - t0, kind: `HTTP ${ex.status} ${String(ex.headers["x-gateway-error-code"] ?? "")}`.trim() };
  } catch (err) {
    return { ms: performance.now() - t0, kind: `client: ${String((err as Error).message ?? err).slice(0, 60)}` };
  }
}

/** Scenario 6's outcome and targets: A answered within the deadline with prefill_timeout,
 *  each hung engine tried at most once per request, B's p99 beside the hang within 2x alone. */
async function hungFigures(hung: EngineRef[], answers: { ms: number; kind: string }[], b: { alone: Outcome; beside: Outcome; again: Outcome }) {
  const outcome = newOutcome();
  for (const a of answers) {
    outcome.requests++;
    noteError(outcome, a.kind);
  }
  for (const o of [b.alone, b.beside, b.again]) {
    outcome.requests += o.requests;
    outcome.ok += o.ok;
    for (const [k, v] of Object.entries(o.errors)) outcome.errors[k] = (outcome.errors[k] ?? 0) + v;
  }
  // Engine-side ids: "<client id>.<key tag>", a retry's with "-<attempt>" after it.
  const triesPerRequest = await Promise.all(hung.map(async (e) => {
    const ids = ((await statsOf(e))?.recent ?? []).map((r) => (r.requestId ?? "").replace(/-\d+$/, ""));
    return { engine: e.name, requests: ids.length, repeated: ids.length - new Set(ids).size };
  }));
  const slowest = Math.max(0, ...answers.map((a) => a.ms));
  const timeouts = answers.filter((a) => a.kind === "HTTP 504 prefill_timeout").length;
  const p99 = Math.max(latency(b.alone).totalP99Ms, latency(b.again).totalP99Ms);
  const besideP99 = latency(b.beside).totalP99Ms;
  const expectations: Expectation[] = [
    { target: `every request of A answered within the deadline (${HUNG_DEADLINE_MS} ms)`, met: answers.length > 0 && slowest <= HUNG_DEADLINE_MS, figure: `${answers.length} requests, slowest ${round(slowest, 0)} ms, median ${round(median(answers.map((a) => a.ms)), 0)} ms` },
    { target: "A's answer is 504 prefill_timeout (naming the engine)", met: timeouts === answers.length, figure: JSON.stringify(Object.fromEntries(Object.entries(outcome.errors).filter(([k]) => k.startsWith("HTTP") || k.startsWith("client")))) },
    { target: "a hung engine tried at most once per request", met: triesPerRequest.every((t) => t.repeated === 0), figure: triesPerRequest.map((t) => `${t.engine}: ${t.requests} tries, ${t.repeated} repeated`).join("; ") },
    { target: "the other tenant's Generate p99 beside the hang within 2x of alone", met: besideP99 <= 2 * p99, figure: `${p99} -> ${besideP99} ms (${round(besideP99 / Math.max(p99, 1e-9), 2)}x)` },
    { target: "no errors for the other tenant", met: [b.alone, b.beside, b.again].every((o) => Object.keys(o.errors).length === 0), figure: JSON.stringify({ ...b.alone.errors, ...b.beside.errors, ...b.again.errors }) },
  ];
  const l = (o: Outcome) => `${latency(o).totalP50Ms}/${latency(o).totalP99Ms} ms (${o.requests})`;
  const notes = [`Key B's Generate p50/p99 alone ${l(b.alone)}, beside ${answers.length} hung requests of A ${l(b.beside)}, alone again ${l(b.again)}. A's requests: slowest answer ${round(slowest, 0)} ms (deadline ${HUNG_DEADLINE_MS} ms; each hung prefill engine waited on for at most ${HUNG_PREFILL_TIMEOUT_MS} ms, the retry on the other one cut to what the deadline left); ${triesPerRequest.map((t) => `${t.engine} received ${t.requests}`).join(", ")}, none twice for one request.`];
  return { outcome, notes, expectations };
}

// ---- docs ------------------------------------------------------------------------------

function replaceBlock(doc: string, start: string, end: string, block: string, insertBefore?: string): string {
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) return doc.slice(0, i) + block + doc.slice(j + end.length);
  if (insertBefore !== undefined) {
    const k = doc.indexOf(insertBefore);
    if (k >= 0) return `${doc.slice(0, k)}${block}\n\n${doc.slice(k)}`;
  }
  return `${doc.trimEnd()}\n\n${block}\n`;
}

const errs = (e: Record<string, number>) => (Object.keys(e).length === 0 ? "none" : Object.entries(e).map(([k, v]) => `${v} × ${k}`).join("; "));

/** What the figures say about the rows above them (only what this run measured). */
function opsNotes(rs: ScenarioResult[]): string {
  const notes: string[] = [];
  const kill = rs.find((r) => r.id.startsWith("2-"));
  if (kill && Object.keys(kill.errors).length > 0) notes.push(`The killed engine's errors are the streams it had already started (${Object.values(kill.errors).reduce((a, b) => a + b, 0)}): they had sent tokens and cannot move; every request it had not started failed over.`);
  const trunc = rs.find((r) => r.id.startsWith("4-"));
  if (trunc && trunc.handoffsLeftToExpire > 0) notes.push(`A truncated (malformed) decode answer is not failed over: the gateway cannot tell whether decode admitted the request, so its handoff waits for the lease (${trunc.handoffsLeftToExpire} of ${trunc.clientRequests} here, until the engine's breaker opened), although another decode engine was available.`);
  return notes.length ? `\n${notes.join(" ")}\n` : "";
}

async function writeDocs(out: { date: string; durationS: number; machine: { cores: number; busyCoresBefore: number }; scenarios: ScenarioResult[] }): Promise<void> {
  const rows = out.scenarios.map((r) =>
    `| ${r.id} | ${r.surface} | ${r.clientRequests} | ${r.ok} | ${errs(r.errors)} | ${r.prefillRunsPerRequest} | ${r.handoffsLeftToExpire} (${r.handoffsPinnedAfter} pinned + ${r.leasesExpired} expired) | ${r.blocksPinnedAfter} | ${r.engineRequestsOpenAfter} | ${r.kvPullsCompleted} / ${r.transfersRejected} | ${r.expectations.every((e) => e.met) ? "all met" : `**missed**: ${r.expectations.filter((e) => !e.met).map((e) => `${e.target} (${e.figure})`).join("; ")}`} |`);
  const flood = out.scenarios.find((r) => r.flood)?.flood;
  const floodTable = flood
    ? `
Abort flood, the other tenant (key B) alone, under key A's flood, and alone again (Generate, streamed, ${MAX_TOKENS} tokens at 2 ms each, ${TENANT_CONCURRENCY} at a time):

| key B | requests | ok | errors | total p50 ms | total p99 ms | TTFT p50 ms | TTFT p99 ms |
|---|---|---|---|---|---|---|---|
| alone | ${flood.baseline.requests} | ${flood.baseline.ok} | ${errs(flood.baseline.errors)} | ${flood.baseline.totalP50Ms} | ${flood.baseline.totalP99Ms} | ${flood.baseline.ttftP50Ms} | ${flood.baseline.ttftP99Ms} |
| under the flood | ${flood.underFlood.requests} | ${flood.underFlood.ok} | ${errs(flood.underFlood.errors)} | ${flood.underFlood.totalP50Ms} | ${flood.underFlood.totalP99Ms} | ${flood.underFlood.ttftP50Ms} | ${flood.underFlood.ttftP99Ms} |
| under a control flood of key A's GET /v1/models (${flood.controlCalls} calls, ${FLOOD_CONCURRENCY} at a time) | ${flood.underControl.requests} | ${flood.underControl.ok} | ${errs(flood.underControl.errors)} | ${flood.underControl.totalP50Ms} | ${flood.underControl.totalP99Ms} | ${flood.underControl.ttftP50Ms} | ${flood.underControl.ttftP99Ms} |
| alone again, after the flood | ${flood.aloneAfter.requests} | ${flood.aloneAfter.ok} | ${errs(flood.aloneAfter.errors)} | ${flood.aloneAfter.totalP50Ms} | ${flood.aloneAfter.totalP99Ms} | ${flood.aloneAfter.ttftP50Ms} | ${flood.aloneAfter.ttftP99Ms} |

CPU (utime+stime from /proc) while key B ran alone: the gateway's workerd ${flood.cpu.alone.workerd ?? "?"} ms and the sim process (every engine) ${flood.cpu.alone.sim ?? "?"} ms in ${flood.cpu.alone.wallMs} ms of wall time; from the flood's start until its last call returned: ${flood.cpu.flood.workerd ?? "?"} ms and ${flood.cpu.flood.sim ?? "?"} ms in ${flood.cpu.flood.wallMs} ms. The load generator, the gateway and the sim share the 2 cores with other work, so the flood's CPU is taken from key B's requests here; in production A's Abort calls run in A's isolate, but the engines still receive the fanned-out RPCs. The control row shows what a flood of key A's cheapest data-plane request (GET /v1/models, through the same auth, limits and rate-limit middleware) at the same width costs key B on this machine: the part of the slowdown that is not Abort handling.

Key A sent ${flood.abortCalls} Abort calls of ${flood.idsPerCall} ids (${FLOOD_CONCURRENCY} at a time; call p50 ${flood.abortCallP50Ms} ms; errors: ${errs(flood.abortCallErrors)}); the engines received ${flood.engineAbortRpcs} Abort RPCs for them (${round(flood.engineAbortRpcs / Math.max(1, flood.abortCalls), 1)} per call: every named id that A is not serving goes to every VllmEngine engine of the model, coalesced per engine (at most one Abort RPC in flight per engine, carrying the ids of every call that arrived meanwhile); calls beyond limits.max_concurrent_aborts_per_key are refused with 429 before their body is read, and calls beyond limits.abort_ids_per_second_per_key with 429 before any engine RPC). Key B's requests that ended aborted: ${flood.tenantAborted}.
`
    : "";
  const section = `<!-- faults:start -->
## Faults (issue 15)

\`npm run bench:faults\` on ${out.date.slice(0, 10)} (${out.durationS} s; ${out.machine.cores} shared, noisy cores, ${out.machine.busyCoresBefore} busy with other work before the run: latencies are indicative only). The gateway runs under \`wrangler dev\` from the work tree and is addressed at the Worker's own workerd socket (as the load test); data-plane API keys on. Each scenario has its own simulated NIXL engines (a prefill engine and two decode engines, lease 30 s), in their own Node process; the engine that is killed runs in a process of its own. Figures are read from the engines' \`/sim/stats\` ${SETTLE_MS / 1000} s after the scenario's last response. "Handoffs left to expire" = leases expired + handoffs still pinned on the prefill engine; "prefill runs per request" = the prefill engine's \`generateRequests\` / client requests. Raw figures: [bench/results/faults.json](../bench/results/faults.json).

| scenario | surface | client requests | ok | client-visible errors | prefill runs / request | handoffs left to expire | blocks pinned after 2 s | engine requests open | pulls / freed by rejection | targets |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

${out.scenarios.map((r) => `- **${r.id}**: ${r.title}. ${r.setup}.${r.notes.length ? ` ${r.notes.join(" ")}` : ""}`).join("\n")}
${floodTable}<!-- faults:end -->`;
  let doc = await readFile("docs/benchmarks.md", "utf8");
  doc = replaceBlock(doc, "<!-- faults:start -->", "<!-- faults:end -->", section);
  await writeFile("docs/benchmarks.md", doc);

  // KV handoffs per failure: issue 32's scenarios (7*) have no handoffs; their figures are in benchmarks.md.
  const opsRows = out.scenarios.filter((r) => !r.flood && !r.id.startsWith("7")).map((r) => `| ${r.title} (${r.surface}) | ${r.clientRequests} | ${r.prefillRunsPerRequest} | ${r.handoffsLeftToExpire} | ${r.blocksPinnedAfter} | ${r.engineRequestsOpenAfter} | ${errs(r.errors)} |`);
  const ops = `<!-- faults-figures:start -->
Measured by \`npm run bench:faults\` on ${out.date.slice(0, 10)} against the simulated cluster (one prefill engine, two decode engines; ${out.machine.cores} shared, noisy cores; details in [benchmarks.md](benchmarks.md#faults-issue-15)):

| failure | client requests | prefill runs / request | handoffs left to expire | blocks pinned 2 s after | engine requests open | client-visible errors |
|---|---|---|---|---|---|---|
${opsRows.join("\n")}
${opsNotes(out.scenarios)}<!-- faults-figures:end -->`;
  let opsDoc = await readFile("docs/operations.md", "utf8");
  // At the end of the section "KV handoffs per failure": before the next heading after it.
  const kvSection = opsDoc.indexOf("## KV handoffs per failure");
  const next = kvSection >= 0 ? opsDoc.indexOf("\n## ", kvSection + 3) : -1;
  opsDoc = replaceBlock(opsDoc, "<!-- faults-figures:start -->", "<!-- faults-figures:end -->", ops, next >= 0 ? opsDoc.slice(next + 1, opsDoc.indexOf("\n", next + 1)) : undefined);
  await writeFile("docs/operations.md", opsDoc);
}

main().catch(async (err: unknown) => {
  console.error(`faults: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  await runCleanups();
  process.exit(1);
});
