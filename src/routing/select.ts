// Engine selection: for a model, a prefill/decode pair (PD) or one regular engine, picked by
// each pool's policy among routable engines (healthy, breaker admitting). Engines that failed
// an earlier attempt of the same request are avoided while others remain; one that hung is
// never picked again for it.
import type { EngineConfig, EngineRole, PolicyName } from "../config/schema.js";
import type { LoadedConfig, LoadedModel } from "../config/load.js";
import { choose, type RoundRobinCounters } from "./policies.js";


export interface SelectOptions {
  /** Engine pools to pick from (config merged with the registry); default: the config's. */
  models?: Record<string, LoadedModel>;
  /** Whether an engine may take traffic now; default: all may. */
  routable?: (engine: EngineConfig) => boolean;
  /** Engines to avoid (failed earlier attempts). */
  exclude?: ReadonlySet<string>;
  /** Engines never to pick, even when no other is left (they hung on an earlier attempt). */
  never?: ReadonlySet<string>;
  routingKey?: string;
  /** Round-robin positions (the isolate's, routing/isolate.ts). */
  counters?: RoundRobinCounters;
  /** The prompt's affinity key; a function so it is computed only for prefix_hash pools. */
  prefixKey?: string | (() => string | undefined);
  load?: (engine: string) => number;
  random?: () => number;
  /** Told each pick (for engine_selection metrics). */
  onSelect?: (engine: EngineConfig, role: "prefill" | "decode" | "regular", policy: PolicyName) => void;
}

export type Selection =
  | { kind: "pd"; model: string; prefill: EngineConfig; decode: EngineConfig; hasEncodeEngines: boolean }
  | { kind: "regular"; model: string; engine: EngineConfig }
  /** The model has engines for these transports, but none can take traffic now. */
  | { kind: "unavailable"; model: string; role: EngineRole }
  | { kind: "none"; model: string };

export function selectEngines(config: LoadedConfig, model: string, transports: ReadonlySet<string>, opts: SelectOptions = {}): Selection {
  const models = opts.models ?? config.models;
  // hasOwn: a client-chosen name like "constructor" must not reach Object.prototype.
  const pools: LoadedModel | undefined = Object.hasOwn(models, model) ? models[model] : undefined;
  if (!pools) return { kind: "none", model };
  const byTransport = (pool: EngineConfig[]) => pool.filter((e) => transports.has(e.transport));
  const prefillPool = byTransport(pools.prefill);
  const decodePool = byTransport(pools.decode);
  if (prefillPool.length > 0 && decodePool.length > 0) {
    const prefill = pick(model, "prefill", prefillPool, pools, opts);
    if (!prefill) return { kind: "unavailable", model, role: "prefill" };
    const decode = pick(model, "decode", decodePool, pools, opts);
    if (!decode) return { kind: "unavailable", model, role: "decode" };
    return { kind: "pd", model, prefill, decode, hasEncodeEngines: pools.encode.length > 0 };
  }
  const regularPool = byTransport(pools.regular);
  if (regularPool.length === 0) return { kind: "none", model };
  const engine = pick(model, "regular", regularPool, pools, opts);
  return engine ? { kind: "regular", model, engine } : { kind: "unavailable", model, role: "regular" };
}

/** A decode engine of the model's pool that `opts.exclude` does not name (decode failover);
 *  undefined when none is left. Unlike a first pick, never falls back to an excluded one. */
export function selectAnotherDecode(config: LoadedConfig, model: string, transports: ReadonlySet<string>, opts: SelectOptions): EngineConfig | undefined {
  const models = opts.models ?? config.models;
  const pools: LoadedModel | undefined = Object.hasOwn(models, model) ? models[model] : undefined;
  if (!pools) return undefined;
  const pool = pools.decode.filter((e) => transports.has(e.transport) && !opts.exclude?.has(e.name));
  return pick(model, "decode", pool, pools, opts);
}

function pick(model: string, role: "prefill" | "decode" | "regular", pool: EngineConfig[], pools: LoadedModel, opts: SelectOptions): EngineConfig | undefined {
  const allowed = opts.never?.size ? pool.filter((e) => !opts.never!.has(e.name)) : pool;
  const routable = opts.routable ? allowed.filter(opts.routable) : allowed;
  const fresh = opts.exclude ? routable.filter((e) => !opts.exclude!.has(e.name)) : routable;
  const candidates = fresh.length > 0 ? fresh : routable;
  const i = choose(pools.policy[role], {
    candidates: candidates.map((e) => e.name),
    stateKey: `${model}\u0000${role}`,
    counters: opts.counters,
    load: opts.load ?? (() => 0),
    routingKey: opts.routingKey,
    prefixKey: pools.policy[role] === "prefix_hash" ? (typeof opts.prefixKey === "function" ? opts.prefixKey() : opts.prefixKey) : undefined,
    random: opts.random,
  });
  if (i === undefined) return undefined;
  opts.onSelect?.(candidates[i]!, role, pools.policy[role]);
  return candidates[i];
}

/** A model's engines that speak one of `transports`, every pool (none for an unknown model). */
export function enginesOf(config: Pick<LoadedConfig, "models">, model: string, transports: ReadonlySet<string>): EngineConfig[] {
  const p = Object.hasOwn(config.models, model) ? config.models[model] : undefined;
  return p ? [...p.decode, ...p.regular, ...p.prefill].filter((e) => transports.has(e.transport)) : [];
}

/** The model a client means when it names none: the only one configured for these transports. */
export function defaultModel(config: LoadedConfig, transports: ReadonlySet<string>): string | undefined {
  const candidates = Object.entries(config.models).filter(([, p]) =>
    [...p.prefill, ...p.decode, ...p.regular].some((e) => transports.has(e.transport)),
  );
  return candidates.length === 1 ? candidates[0]![0] : undefined;
}
