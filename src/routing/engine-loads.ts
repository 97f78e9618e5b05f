// Engine-reported load for power_of_two (config `loads.enabled`): GetLoads is polled in the
// background per isolate and cached for `loads.ttl_ms`; the hot path only reads the cache.
// An engine without a reading (openai-http engines, or before the first poll) falls back to
// this isolate's in-flight count.
import type { EngineConfig } from "../config/schema.js";
import type { GatewayContext } from "../context.js";
import { vllmEngineClient } from "../backends/vllm-engine.js";
import { engineLoad } from "./load.js";

interface Reading {
  at: number;
  /** Requests the engine reports running plus waiting (all DP ranks). */
  queued?: number;
  polling: boolean;
}

const readings = new Map<string, Reading>();
const POLL_TIMEOUT_MS = 2_000;

export function loadFunction(gw: GatewayContext, now: () => number = Date.now): (engine: string) => number {
  if (!gw.config.loads.enabled) return engineLoad;
  const byName = new Map<string, EngineConfig>();
  for (const pools of Object.values(gw.routing.models)) {
    for (const e of [...pools.prefill, ...pools.decode, ...pools.regular]) byName.set(e.name, e);
  }
  return (name) => {
    const engine = byName.get(name);
    if (!engine || engine.transport === "openai-http") return engineLoad(name);
    const r = readings.get(name) ?? { at: 0, polling: false };
    if (!r.polling && now() - r.at >= gw.config.loads.ttl_ms) {
      r.polling = true;
      readings.set(name, r);
      gw.waitUntil(poll(engine, r, now));
    }
    // The engine's own count plus what this isolate sent since the last poll.
    return r.queued !== undefined ? r.queued + engineLoad(name) : engineLoad(name);
  };
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

/** Forget all readings (tests). */
export function resetEngineLoads(): void {
  readings.clear();
}
