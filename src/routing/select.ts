// Engine selection from the configured pools. Round-robin per (model, role), separate
// counters for prefill and decode so one leg's picks do not shift the other's.
import type { EngineConfig, EngineRole } from "../config/schema.js";
import type { LoadedConfig, LoadedModel } from "../config/load.js";

const counters = new Map<string, number>();

export function roundRobin(model: string, role: EngineRole, pool: EngineConfig[]): EngineConfig | undefined {
  if (pool.length === 0) return undefined;
  const key = `${model}\u0000${role}`;
  const i = counters.get(key) ?? 0;
  counters.set(key, (i + 1) % pool.length);
  return pool[i % pool.length];
}

export type Selection =
  | { kind: "pd"; model: string; prefill: EngineConfig; decode: EngineConfig; hasEncodeEngines: boolean }
  | { kind: "regular"; model: string; engine: EngineConfig }
  | { kind: "none"; model: string };

/** Picks a prefill/decode pair for a PD model, or one engine of an aggregated model. */
export function selectEngines(config: LoadedConfig, model: string, transports: ReadonlySet<string>): Selection {
  const pools: LoadedModel | undefined = config.models[model];
  if (!pools) return { kind: "none", model };
  const usable = (pool: EngineConfig[]) => pool.filter((e) => transports.has(e.transport));
  const prefillPool = usable(pools.prefill);
  const decodePool = usable(pools.decode);
  if (prefillPool.length > 0 && decodePool.length > 0) {
    const prefill = roundRobin(model, "prefill", prefillPool)!;
    const decode = roundRobin(model, "decode", decodePool)!;
    return { kind: "pd", model, prefill, decode, hasEncodeEngines: pools.encode.length > 0 };
  }
  const regular = roundRobin(model, "regular", usable(pools.regular));
  if (regular) return { kind: "regular", model, engine: regular };
  return { kind: "none", model };
}

/** The model a client means when it names none: the only one configured for these transports. */
export function defaultModel(config: LoadedConfig, transports: ReadonlySet<string>): string | undefined {
  const candidates = Object.entries(config.models).filter(([, p]) =>
    [...p.prefill, ...p.decode, ...p.regular].some((e) => transports.has(e.transport)),
  );
  return candidates.length === 1 ? candidates[0]![0] : undefined;
}
