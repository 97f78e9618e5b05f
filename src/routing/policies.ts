// Engine selection policies (pd-reference 8), per pool. Each picks one candidate index from
// the routable engines; prefill and decode keep separate state (round-robin counters, which
// the isolate state owns: routing/isolate.ts).
import type { PolicyName } from "../config/schema.js";
import { rendezvous } from "./hashing.js";

export interface PolicyInput {
  /** Routable candidates (healthy, breaker closed or half-open), by name. */
  candidates: readonly string[];
  /** Counter key for stateful policies, e.g. "model/prefill". */
  stateKey: string;
  /** Where round_robin keeps its position per stateKey (the isolate's); without it every
   *  round_robin pick is the first candidate. */
  counters?: RoundRobinCounters;
  /** In-flight load of an engine (local, or from GetLoads when enabled). */
  load(engine: string): number;
  /** Session key from `x-routing-key`, for consistent_hash. */
  routingKey?: string;
  /** Prompt prefix, for prefix_hash. */
  prefixKey?: string;
  random?: () => number;
}

/** prefix_hash: follow the hash unless that engine is this much above the average load. */
export const PREFIX_HASH_LOAD_FACTOR = 1.25;

/** Round-robin positions by state key. Keys are model x pool, so the map stays small; the
 *  cap only guards against a registry that churns through model names. */
export class RoundRobinCounters {
  private readonly positions = new Map<string, number>();

  constructor(private readonly maxKeys: number = 4096) {}

  /** The position for `key`, advancing it. */
  next(key: string): number {
    const i = this.positions.get(key) ?? 0;
    if (!this.positions.has(key) && this.positions.size >= this.maxKeys) this.positions.clear();
    this.positions.set(key, (i + 1) % 1_000_000_007);
    return i;
  }

  get size(): number {
    return this.positions.size;
  }
}

export function choose(policy: PolicyName, input: PolicyInput): number | undefined {
  const { candidates } = input;
  if (candidates.length === 0) return undefined;
  if (candidates.length === 1) return 0;
  const random = input.random ?? Math.random;
  switch (policy) {
    case "round_robin":
      return (input.counters?.next(input.stateKey) ?? 0) % candidates.length;
    case "random":
      return Math.floor(random() * candidates.length);
    case "power_of_two": {
      const a = Math.floor(random() * candidates.length);
      let b = Math.floor(random() * (candidates.length - 1));
      if (b >= a) b++;
      return input.load(candidates[b]!) < input.load(candidates[a]!) ? b : a;
    }
    case "consistent_hash":
      return input.routingKey !== undefined ? rendezvous(input.routingKey, candidates) : Math.floor(random() * candidates.length);
    case "prefix_hash": {
      if (input.prefixKey === undefined) return leastLoaded(input);
      const owner = rendezvous(input.prefixKey, candidates);
      const total = candidates.reduce((sum, c) => sum + input.load(c), 0);
      const threshold = ((total + 1) / candidates.length) * PREFIX_HASH_LOAD_FACTOR;
      return input.load(candidates[owner]!) <= threshold ? owner : leastLoaded(input);
    }
  }
}

function leastLoaded(input: PolicyInput): number {
  let best = 0;
  input.candidates.forEach((c, i) => {
    if (input.load(c) < input.load(input.candidates[best]!)) best = i;
  });
  return best;
}

/** Prompt prefix used by prefix_hash: the first 256 token ids, or the first 1024 characters. */
export function prefixKeyOf(input: { tokens?: readonly number[]; text?: string }): string | undefined {
  if (input.tokens && input.tokens.length > 0) return input.tokens.slice(0, 256).join(",");
  if (input.text) return input.text.slice(0, 1024);
  return undefined;
}
