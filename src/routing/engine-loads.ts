// Engine-reported load, for power_of_two (config `loads.enabled`) and the PD decider's queue
// limits: GetLoads (VllmEngine engines) or the Prometheus gauges at /metrics (vLLM OpenAI
// servers) are polled in the background per isolate and cached for `loads.ttl_ms`; the hot
// path only reads the cache. An engine without a reading (before the first poll, or a failed
// one) falls back to this isolate's in-flight count for load, and to "unknown" for waiting.
import type { LoadedModel } from "../config/load.js";
import type { EngineConfig } from "../config/schema.js";
import type { EngineLoads } from "../core/in-flight.js";
import type { EngineConnections } from "../backends/engine-clients.js";
import { engineRouteUrl } from "../backends/openai-http.js";

interface Reading {
  at: number;
  /** Requests the engine reports running plus waiting (all DP ranks). */
  queued?: number;
  /** Requests the engine reports waiting (not yet scheduled). */
  waiting?: number;
  polling: boolean;
}

const POLL_TIMEOUT_MS = 2_000;

export interface LoadSources {
  settings: { enabled: boolean; ttl_ms: number };
  models: Record<string, LoadedModel>;
  local: EngineLoads;
  waitUntil(promise: Promise<unknown>): void;
  now?: () => number;
}

export class EngineLoadReadings {
  private readonly readings = new Map<string, Reading>();

  constructor(private readonly engines: EngineConnections) {}

  /** The load function a selection uses for this request. */
  loadFunction(s: LoadSources): (engine: string) => number {
    const local = (name: string) => s.local.load(name);
    if (!s.settings.enabled) return local;
    const now = s.now ?? Date.now;
    const byName = new Map<string, EngineConfig>();
    for (const pools of Object.values(s.models)) {
      for (const e of [...pools.prefill, ...pools.decode, ...pools.regular]) byName.set(e.name, e);
    }
    return (name) => {
      const engine = byName.get(name);
      if (!engine || engine.transport === "openai-http") return local(name);
      const r = this.reading(engine, s, now);
      // The engine's own count plus what this isolate sent since the last poll.
      return r.queued !== undefined ? r.queued + local(name) : local(name);
    };
  }

  /** Requests waiting at the engine as it last reported them (undefined = no reading yet);
   *  starts a background poll when the reading is older than the TTL. */
  waiting(engine: EngineConfig, s: Pick<LoadSources, "settings" | "waitUntil" | "now">): number | undefined {
    return this.reading(engine, s, s.now ?? Date.now).waiting;
  }

  private reading(engine: EngineConfig, s: Pick<LoadSources, "settings" | "waitUntil">, now: () => number): Reading {
    const r = this.readings.get(engine.name) ?? { at: 0, polling: false };
    if (!r.polling && now() - r.at >= s.settings.ttl_ms) {
      r.polling = true;
      this.readings.set(engine.name, r);
      s.waitUntil(poll(engine, r, now, this.engines));
    }
    return r;
  }
}

async function poll(engine: EngineConfig, r: Reading, now: () => number, engines: EngineConnections): Promise<void> {
  try {
    const counts = engine.transport === "openai-http" ? await metricsGauges(engine, engines) : await getLoads(engine, engines);
    r.queued = counts.running + counts.waiting;
    r.waiting = counts.waiting;
  } catch {
    r.queued = r.waiting = undefined; // unknown: use local counts until the next poll
  } finally {
    r.at = now();
    r.polling = false;
  }
}

async function getLoads(engine: EngineConfig, engines: EngineConnections): Promise<{ running: number; waiting: number }> {
  const res = await engines.vllmEngine(engine).getLoads({}, { timeoutMs: POLL_TIMEOUT_MS });
  return res.loads.reduce((n, l) => ({ running: n.running + l.numRunningReqs, waiting: n.waiting + l.numWaitingReqs }), { running: 0, waiting: 0 });
}

/** vLLM's OpenAI server exports vllm:num_requests_running / _waiting gauges at /metrics. */
async function metricsGauges(engine: EngineConfig, engines: EngineConnections): Promise<{ running: number; waiting: number }> {
  const res = await engines.fetchFor(engine)(engineRouteUrl(engine.url, "/metrics"), { signal: AbortSignal.timeout(POLL_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  return { running: gaugeSum(text, "vllm:num_requests_running"), waiting: gaugeSum(text, "vllm:num_requests_waiting") };
}

/** Sum of a gauge's samples (one per label set) in Prometheus text format. Pure. */
export function gaugeSum(text: string, name: string): number {
  let sum = 0;
  let seen = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== "{" && line[name.length] !== " ")) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(value)) {
      sum += value;
      seen = true;
    }
  }
  if (!seen) throw new Error(`${name} not found`);
  return sum;
}
