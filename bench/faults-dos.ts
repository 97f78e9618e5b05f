// `npm run bench:faults`, issue 32 items 1-2: what one attacker's requests cost another tenant
// on the same isolate. Two scenarios, each with the other tenant (key B) alone, under key A's
// attack, and alone again:
//   7a-tokenizer-bomb: key A sends prompts the gateway must tokenize (Qwen3 on a VllmEngine
//     engine): 3.9 MB of prose, 1 MB of spaces, a 1M-letter run with no break; key B sends
//     small completions to the same model (its prompts go through the same tokenizer).
//   7b-big-sse-event: key A streams from engines that send a 4 MiB event (vLLM's logprobs) and
//     a 32 MiB event that never ends; key B streams small completions from another model.
// Targets: key B's p99 within 2x of alone; key A answered within a documented bound
// (docs/operations.md, "Bounds on one request"). Self-contained: its own sim processes (key
// A's engines in one, key B's in another, so the sim writing a 32 MiB event or reading a 4 MB
// prompt does not slow key B's engine: only the gateway's isolate is shared) and models,
// merged into the gateway's config by bench/faults.ts. Key B's Qwen3 model is another name
// for the same tokenizer bundle, which the isolate parses once and shares.
import { join } from "node:path";
import { mkdir } from "node:fs/promises";
import type { ClusterSpec, EngineSpec } from "../sim/types.js";
import { agentFor, post } from "./http.js";
import { CpuMeter } from "./proc.js";
import { percentile, round } from "./stats.js";
import { startSim, type SimProcess } from "./targets.js";
import type { Outcome } from "./faults.js";

export const DOS_QWEN = "Qwen/Qwen3-0.6B";
const TENANT_QWEN = "Qwen/Qwen3-0.6B-tenant";
const BIG = "m-dos-big";
const WEDGE = "m-dos-wedge";
const CALM = "m-dos-calm";
const MiB = 1024 * 1024;
/** Bounds the attacker's answers are held to (docs/operations.md). */
export const TOKENIZER_BOMB_BOUND_MS = 5_000;
export const BIG_EVENT_BOUND_MS = 5_000;
const PHASE_MS = 5_000;
const TENANT_WIDTH = 4;
const TENANT_MAX = 400;
/** One attacking request at a time, back to back: the attack is continuous, and the load
 *  generator (which shares the machine) does not become the bottleneck. */
const ATTACK_WIDTH = 1;

export interface DosScenario {
  id: string;
  title: string;
  surface: string;
  setup: string;
  /** The engine counted as the scenario's "prefill" engine by faults.ts (it has none). */
  engine: string;
  run(): Promise<{ outcome: Outcome; notes: string[]; expectations: { target: string; met: boolean; figure: string }[] }>;
}

const fast = { perPromptTokenMs: 0.001, perOutputTokenMs: 1, perBlockPullMs: 0.01, pullSetupMs: 0 };
const engine = (name: string, model: string, extra: Partial<EngineSpec> = {}): EngineSpec => ({ name, role: "both", kvConnector: "none", model, latency: fast, keepAliveTimeoutMs: 905_000, ...extra });

export interface DosSims {
  /** Key A's engines: a Qwen3 engine (VllmEngine: the gateway tokenizes), and OpenAI HTTP
   *  engines sending a 4 MiB event and a 32 MiB event that never ends. */
  attack: SimProcess;
  /** Key B's: a Qwen3 engine and a calm OpenAI HTTP engine. */
  tenant: SimProcess;
}

export async function startDosSims(tmp: string): Promise<DosSims> {
  const start = async (name: string, engines: EngineSpec[]) => {
    const dir = join(tmp, name);
    await mkdir(dir, { recursive: true });
    return startSim({ recentRequests: 1, engines } satisfies ClusterSpec, dir);
  };
  const attack = await start("dos-attack", [
    engine("dq", DOS_QWEN),
    engine("dbig", BIG, { faults: [{ bigEvent: { bytes: 4 * MiB } }] }),
    engine("dwedge", WEDGE, { faults: [{ bigEvent: { bytes: 32 * MiB, unterminated: true } }] }),
  ]);
  const tenant = await start("dos-tenant", [engine("dqt", TENANT_QWEN), engine("dcalm", CALM)]);
  return { attack, tenant };
}

/** The gateway's models for the scenarios. */
export function dosModels(s: DosSims): Record<string, unknown> {
  const http = (sim: SimProcess, name: string) => ({ regular: [{ name, url: sim.url(name), transport: "openai-http" }] });
  const connect = (sim: SimProcess, name: string) => ({ regular: [{ name, url: sim.url(name), transport: "connect" }] });
  return {
    [DOS_QWEN]: connect(s.attack, "dq"),
    [TENANT_QWEN]: connect(s.tenant, "dqt"),
    [BIG]: http(s.attack, "dbig"),
    [WEDGE]: http(s.attack, "dwedge"),
    [CALM]: http(s.tenant, "dcalm"),
  };
}

function newOutcome(): Outcome {
  return { ok: 0, errors: {}, requests: 0, samples: [], ttfts: [] };
}

const note = (o: Outcome, kind: string) => void (o.errors[kind] = (o.errors[kind] ?? 0) + 1);

/** One completion; its outcome ("200", "400 context_length_exceeded", "SSE error <code>", ...).
 *  `timeEvents` false: the body is only read (the attacker's 4 MiB events are not parsed by the
 *  load generator, whose time key B's figures share). */
async function complete(base: string, key: string, body: Record<string, unknown> | string, o: Outcome, lane: string, timeEvents = true): Promise<{ kind: string; ms: number }> {
  o.requests++;
  const t0 = performance.now();
  let kind: string;
  try {
    const text0 = typeof body === "string" ? body : JSON.stringify(body);
    const stream = typeof body === "string" ? body.includes('"stream":true') : body.stream === true;
    const ex = await post(`${base}/v1/completions`, text0, { agent: agentFor(lane, 8), headers: { authorization: `Bearer ${key}` }, keepBody: true, sse: stream && timeEvents, timeoutMs: 120_000 });
    const text = ex.body ?? "";
    if (ex.status !== 200) kind = `HTTP ${ex.status} ${String(ex.headers["x-gateway-error-code"] ?? "")}`;
    else if (stream) {
      const err = /"error"\s*:\s*\{[^}]*"code"\s*:\s*"?([\w-]+)/.exec(text.slice(-2_000));
      kind = err ? `SSE error ${err[1]}` : text.endsWith("data: [DONE]\n\n") ? "200" : "200, stream cut (no [DONE])";
      if (!err && ex.events?.[0] !== undefined) o.ttfts.push(ex.events[0]);
    } else kind = "200";
  } catch (err) {
    kind = `client: ${String((err as Error).message ?? err).slice(0, 60)}`;
  }
  const ms = performance.now() - t0;
  if (kind === "200") {
    o.ok++;
    o.samples.push(ms);
  } else note(o, kind);
  return { kind, ms };
}

/** `width` lanes of `one` until the phase's time or request budget is spent. */
async function lanes(width: number, ms: number, max: number, one: () => Promise<unknown>): Promise<void> {
  const stopAt = performance.now() + ms;
  let sent = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (sent < max && performance.now() < stopAt) {
      sent++;
      await one();
    }
  }));
}

interface Phase {
  p50: number;
  p99: number;
  requests: number;
  errors: Record<string, number>;
  cpuMs: number;
  wallMs: number;
}

const phaseOf = (o: Outcome, cpu: { wallMs: number; cpuMs: Record<string, number> }): Phase => ({
  p50: round(percentile(o.samples, 50), 1), p99: round(percentile(o.samples, 99), 1), requests: o.requests, errors: o.errors,
  cpuMs: round(cpu.cpuMs.workerd ?? 0, 0), wallMs: round(cpu.wallMs, 0),
});

interface AttackKind {
  name: string;
  body: Record<string, unknown>;
  /** The answer it must get. */
  expect: string;
}

/** Key B alone, under key A's attack, alone again; key A's answers timed and checked. */
async function underAttack(d: DosDeps, tenantBody: Record<string, unknown>, attacks: AttackKind[], bound: number) {
  const tenant = (o: Outcome) => () => complete(d.base, d.keyTenant, tenantBody, o, "dos-tenant");
  const meter = () => new CpuMeter({ workerd: d.workerPid });
  const warm = newOutcome();
  await lanes(1, 60_000, 2, tenant(warm)); // the tokenizer (or the engine's connection) loaded
  // Each attack once on a quiet isolate: what it costs by itself.
  const bodies = attacks.map((a) => JSON.stringify(a.body)); // built once, not per request
  const solo: string[] = [];
  for (const [i, a] of attacks.entries()) {
    const cm = meter();
    const r = await complete(d.base, d.keyAttacker, bodies[i]!, warm, "dos-attacker", false);
    const c = cm.stop();
    solo.push(`${a.name}: ${r.kind} in ${round(r.ms, 0)} ms, ${round(c.cpuMs.workerd ?? 0, 0)} ms CPU`);
  }
  const alone = newOutcome();
  let m = meter();
  await lanes(TENANT_WIDTH, PHASE_MS, TENANT_MAX, tenant(alone));
  const aloneFig = phaseOf(alone, m.stop());
  const attacked = newOutcome();
  const attacker = newOutcome();
  const answers: Record<string, { kinds: Record<string, number>; ms: number[] }> = {};
  let stop = false;
  let n = 0;
  m = meter();
  const attacking = Promise.all(Array.from({ length: ATTACK_WIDTH }, async () => {
    // Until the phase ends, and every kind at least once.
    while (!stop || n < attacks.length) {
      const i = n++ % attacks.length;
      const a = attacks[i]!;
      const r = await complete(d.base, d.keyAttacker, bodies[i]!, attacker, "dos-attacker", false);
      const e = (answers[a.name] ??= { kinds: {}, ms: [] });
      e.kinds[r.kind] = (e.kinds[r.kind] ?? 0) + 1;
      e.ms.push(r.ms);
    }
  }));
  await lanes(TENANT_WIDTH, PHASE_MS, TENANT_MAX, tenant(attacked));
  stop = true;
  await attacking;
  const attackedFig = phaseOf(attacked, m.stop());
  const again = newOutcome();
  m = meter();
  await lanes(TENANT_WIDTH, PHASE_MS, TENANT_MAX, tenant(again));
  const againFig = phaseOf(again, m.stop());
  const baseP99 = Math.max(aloneFig.p99, againFig.p99);
  const slowest = Math.max(0, ...Object.values(answers).flatMap((a) => a.ms));
  const tenantErrors = { ...alone.errors, ...attacked.errors, ...again.errors };
  const expectations = [
    { target: "the other tenant's p99 within 2x of alone", met: attackedFig.p99 <= 2 * baseP99, figure: `${baseP99} -> ${attackedFig.p99} ms (${round(attackedFig.p99 / Math.max(baseP99, 0.1), 2)}x; p50 ${Math.max(aloneFig.p50, againFig.p50)} -> ${attackedFig.p50} ms)` },
    { target: "no errors for the other tenant", met: Object.keys(tenantErrors).length === 0, figure: JSON.stringify(tenantErrors) },
    { target: `the attacker answered within ${bound} ms`, met: slowest <= bound, figure: `slowest ${round(slowest, 0)} ms` },
    ...attacks.map((a) => {
      const got = answers[a.name]?.kinds ?? {};
      return { target: `${a.name}: ${a.expect}`, met: Object.keys(got).length > 0 && Object.keys(got).every((k) => k === a.expect), figure: JSON.stringify(got) };
    }),
  ];
  const all = newOutcome();
  for (const o of [warm, alone, attacked, again, attacker]) {
    all.requests += o.requests;
    all.ok += o.ok;
    for (const [k, v] of Object.entries(o.errors)) all.errors[k] = (all.errors[k] ?? 0) + v;
  }
  const perKind = Object.entries(answers).map(([k, a]) => `${k}: ${a.ms.length} sent, p50 ${round(percentile(a.ms, 50), 0)} ms, slowest ${round(Math.max(...a.ms), 0)} ms`).join("; ");
  const cpuAttack = round(attackedFig.cpuMs - (aloneFig.cpuMs / Math.max(1, aloneFig.wallMs)) * attackedFig.wallMs * (attacked.requests / Math.max(1, alone.requests)), 0);
  const notes = [
    `Key B (${TENANT_WIDTH} at a time, ${PHASE_MS / 1000} s per phase): alone p50/p99 ${aloneFig.p50}/${aloneFig.p99} ms (${aloneFig.requests} requests), under attack ${attackedFig.p50}/${attackedFig.p99} ms (${attackedFig.requests}), alone again ${againFig.p50}/${againFig.p99} ms (${againFig.requests}).`,
    `Key A alone, each once (the gateway's workerd CPU in that time): ${solo.join("; ")}.`,
    `Key A (${ATTACK_WIDTH} at a time, back to back, each kind at least once): ${perKind}.`,
    `The gateway's workerd CPU: ${aloneFig.cpuMs} ms alone, ${attackedFig.cpuMs} ms under attack (about ${round(cpuAttack / Math.max(1, attacker.requests), 0)} ms per attacking request beyond key B's share), ${againFig.cpuMs} ms alone again.`,
    `Client-visible errors in the table include key A's (expected) answers.`,
  ];
  d.log(`${d.current}: ${notes.join(" ")}`);
  return { outcome: all, notes, expectations };
}

export interface DosDeps {
  base: string;
  workerPid: number | undefined;
  keyAttacker: string;
  keyTenant: string;
  log(m: string): void;
  /** The scenario running (for the log). */
  current?: string;
}

const prose = (bytes: number) => "The quick brown fox jumps over the lazy dog, 1234 times! ".repeat(Math.ceil(bytes / 57)).slice(0, bytes);
const letterRun = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join("");

export function dosScenarios(d: DosDeps): DosScenario[] {
  return [
    {
      id: "7a-tokenizer-bomb",
      title: "huge prompts for a model the gateway tokenizes, beside another tenant",
      surface: "openai",
      setup: `key B: completions of a 12-token prompt on ${TENANT_QWEN} (a VllmEngine engine: the gateway tokenizes, with the same tokenizer as key A's model), max_tokens 4, ${TENANT_WIDTH} at a time, ${PHASE_MS / 1000} s alone, under attack, alone again; key A meanwhile, back to back: 3.9 MB of prose, 1 MB of spaces, a run of 1,000,000 letters with no break`,
      engine: "dq",
      async run() {
        d.current = "7a-tokenizer-bomb";
        return underAttack(d, { model: TENANT_QWEN, prompt: "Summarise the tides of the northern sea in a line.", max_tokens: 4, ignore_eos: true }, [
          { name: "3.9 MB of prose", body: { model: DOS_QWEN, prompt: prose(3_900_000), max_tokens: 4 }, expect: "HTTP 400 context_length_exceeded" },
          { name: "1 MB of spaces (7813 tokens)", body: { model: DOS_QWEN, prompt: " ".repeat(1_000_000), max_tokens: 1, ignore_eos: true }, expect: "200" },
          { name: "1,000,000 letters, no break", body: { model: DOS_QWEN, prompt: letterRun(1_000_000), max_tokens: 4 }, expect: "HTTP 400 context_length_exceeded" },
        ], TOKENIZER_BOMB_BOUND_MS);
      },
    },
    {
      id: "7b-big-sse-event",
      title: "engines sending huge SSE events, beside another tenant",
      surface: "openai",
      setup: `key B: streamed completions from ${CALM}, max_tokens 8, ${TENANT_WIDTH} at a time, ${PHASE_MS / 1000} s alone, under attack, alone again; key A meanwhile, back to back, streams from ${BIG} (its engine's first event is 4 MiB of logprobs) and ${WEDGE} (a 32 MiB event that never ends; bounds.max_sse_event_bytes 8 MiB)`,
      engine: "dbig",
      async run() {
        d.current = "7b-big-sse-event";
        return underAttack(d, { model: CALM, prompt: "hello there", max_tokens: 8, ignore_eos: true, stream: true }, [
          { name: "a 4 MiB event", body: { model: BIG, prompt: "hi", max_tokens: 4, ignore_eos: true, stream: true }, expect: "200" },
          { name: "a 32 MiB event with no end", body: { model: WEDGE, prompt: "hi", max_tokens: 4, ignore_eos: true, stream: true }, expect: "SSE error engine_event_too_large" },
        ], BIG_EVENT_BOUND_MS);
      },
    },
  ];
}
