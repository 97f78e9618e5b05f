// Pure pieces of one health-check run in the registry object: what to probe, whether a run is
// due, and how a round of probe results moves the shared health map (through the state machine
// in health-state.ts, never beside it).
import type { LoadedConfig } from "../config/load.js";
import { applyProbe, newHealth, type EngineHealth, type HealthSettings } from "./health-state.js";
import type { HealthTransitionReport, ProbeTarget, RegistryEngine, RegistryPlan } from "./registry-types.js";
import { ENGINE_ROLES } from "./registry-types.js";

export interface ProbeResult {
  name: string;
  /** The URL that was probed: a result for an engine re-pointed meanwhile is dropped. */
  url: string;
  ok: boolean;
  error?: string;
}

/** Every config engine once per name (a name listed twice is probed at its first URL). */
export function configProbeTargets(models: LoadedConfig["models"]): ProbeTarget[] {
  const seen = new Map<string, ProbeTarget>();
  for (const pools of Object.values(models)) {
    for (const role of ENGINE_ROLES) {
      for (const e of pools[role]) if (!seen.has(e.name)) seen.set(e.name, { name: e.name, url: e.url, transport: e.transport, ...(e.binding !== undefined ? { binding: e.binding } : {}) });
    }
  }
  return [...seen.values()];
}

export function registryPlan(config: Pick<LoadedConfig, "models" | "health" | "breaker">): RegistryPlan {
  return { health: config.health, breaker: config.breaker, configEngines: configProbeTargets(config.models) };
}

/** Config engines, then active registry engines whose id no config engine uses. Draining
 *  engines take no new requests, so probing them would only spend connections. */
export function probeTargets(plan: RegistryPlan, registry: readonly RegistryEngine[]): ProbeTarget[] {
  const out = new Map(plan.configEngines.map((t) => [t.name, t]));
  for (const e of registry) {
    if (e.status === "active" && !out.has(e.id)) out.set(e.id, { name: e.id, url: e.url, transport: e.transport, ...(e.binding !== undefined ? { binding: e.binding } : {}) });
  }
  return [...out.values()];
}

/** Config engines whose name the previous plan had at another URL or transport: a different
 *  engine as far as health and breakers go (a redeploy re-pointed it, or a dev restart gave
 *  the simulated engine a new port), so their shared state must start over rather than keep
 *  routing by the old engine's record. */
export function repointedTargets(prev: readonly ProbeTarget[], next: readonly ProbeTarget[]): string[] {
  const before = new Map(prev.map((t) => [t.name, t]));
  return next.filter((t) => {
    const old = before.get(t.name);
    return old !== undefined && (old.url !== t.url || old.transport !== t.transport || old.binding !== t.binding);
  }).map((t) => t.name);
}

/** A cron-triggered run is skipped when the alarm (or an earlier cron) ran within the last
 *  0.9 interval, so the two schedulers together never double the probe rate. */
export function runIsDue(lastRunAt: number | undefined, intervalSecs: number, now: number): boolean {
  return lastRunAt === undefined || now - lastRunAt >= intervalSecs * 900;
}

/** Applies one round of results. Results for engines that are no longer targets (removed or
 *  re-pointed while the probes were in flight) are dropped; state of engines that are no
 *  longer targets is pruned, so a removed engine does not linger in the map. */
export function applyProbeResults(
  prev: ReadonlyMap<string, EngineHealth>,
  targets: readonly ProbeTarget[],
  results: readonly ProbeResult[],
  settings: HealthSettings,
  now: number,
): { next: Map<string, EngineHealth>; transitions: HealthTransitionReport[] } {
  const current = new Map(targets.map((t) => [t.name, t]));
  const next = new Map<string, EngineHealth>();
  for (const [name, h] of prev) if (current.has(name)) next.set(name, h);
  const transitions: HealthTransitionReport[] = [];
  for (const r of results) {
    if (current.get(r.name)?.url !== r.url) continue;
    const before = next.get(r.name) ?? newHealth();
    const after = applyProbe(before, settings, r.ok, now, r.error);
    next.set(r.name, after);
    if (after.status !== before.status) {
      const t: HealthTransitionReport = { engine: r.name, from: before.status, to: after.status };
      if (!r.ok && r.error !== undefined) t.error = r.error;
      transitions.push(t);
    }
  }
  return { next, transitions };
}
