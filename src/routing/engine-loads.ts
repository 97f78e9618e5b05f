// Engine-reported load for power_of_two (config `loads.enabled`): GetLoads is polled in the
// background per isolate and cached for `loads.ttl_ms`; the hot path only reads the cache.
// An engine without a reading (openai-http engines, or before the first poll) falls back to
// this isolate's in-flight count.
import type { LoadedModel } from "../config/load.js";
import type { EngineConfig } from "../config/schema.js";
import type { EngineLoads } from "../core/in-flight.js";
import { vllmEngineClient } from "../backends/vllm-engine.js";

interface Reading {
  at: number;
  /** Requests the engine reports running plus waiting (all DP ranks). */
  queued?: number;
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
      const r = this.readings.get(name) ?? { at: 0, polling: false };
      if (!r.polling && now() - r.at >= s.settings.ttl_ms) {
        r.polling = true;
        this.readings.set(name, r);
        s.waitUntil(poll(engine, r, now));
      }
      // The engine's own count plus what this isolate sent since the last poll.
      return r.queued !== undefined ? r.queued + local(name) : local(name);
    };
  }

  /** The engine's last reported queue (running + waiting), if any. */
  queued(engine: string): number | undefined {
    return this.readings.get(engine)?.queued;
  }
}

async function poll(engine: EngineConfig, r: Reading, now: () => number): Promise<void> {
  try {
    const res = await vllmEngineClient(engine).getLoads({}, { timeoutMs: POLL_TIMEOUT_MS });
    r.queued = res.loads.reduce((n, l) => n + l.numRunningReqs + l.numWaitingReqs, 0);
  } catch {
    r.queued = undefined; // unknown: use local counts until the next poll
  } finally {
    r.at = now();
    r.polling = false;
  }
}
