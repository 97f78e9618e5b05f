// A model's pools seen per cluster: each cluster's state for cluster choice (clusters.ts) and
// the model's pools cut down to one cluster, which is all the engine selection then sees, so
// a request's prefill, decode and encode engines cannot come from two clusters.
import type { LoadedModel } from "../config/load.js";
import { DEFAULT_CLUSTER, type ClusterConfig, type EngineConfig } from "../config/schema.js";
import type { ClusterCandidate, ClusterState } from "./clusters.js";

export const clusterOf = (e: EngineConfig): string => e.cluster ?? DEFAULT_CLUSTER;

const POOLS = ["prefill", "decode", "encode", "regular"] as const;

/** The clusters a model's engines name, in the config's `clusters` order, then by name. */
export function clustersOfModel(pools: LoadedModel, described: Record<string, ClusterConfig>): string[] {
  const names = new Set<string>();
  for (const role of POOLS) for (const e of pools[role]) names.add(clusterOf(e));
  const order = Object.keys(described);
  const rank = (n: string) => (order.includes(n) ? order.indexOf(n) : order.length);
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The model's pools with only `cluster`'s engines (a new object; the input is not touched). */
export function poolsInCluster(pools: LoadedModel, cluster: string): LoadedModel {
  const only = (list: EngineConfig[]) => list.filter((e) => clusterOf(e) === cluster);
  return { ...pools, prefill: only(pools.prefill), decode: only(pools.decode), encode: only(pools.encode), regular: only(pools.regular) };
}

/** How one engine looks to cluster choice right now. */
export interface EngineCondition {
  /** May take traffic (health, breakers) and is not barred for this request. */
  usable(e: EngineConfig): boolean;
  /** Pushing back (recent capacity status), failed earlier in this request, or over the queue
   *  limit of its pool. */
  busy(e: EngineConfig, role: "prefill" | "decode" | "regular"): boolean;
}

/** A cluster's state for a request over these transports: the pools it needs are prefill and
 *  decode when it has both (PD), else regular. Down when a needed pool has no usable engine;
 *  saturated when every usable engine of a needed pool is busy. */
export function clusterState(pools: LoadedModel, transports: ReadonlySet<string>, cond: EngineCondition): ClusterState {
  const of = (list: EngineConfig[]) => list.filter((e) => transports.has(e.transport));
  const prefill = of(pools.prefill);
  const decode = of(pools.decode);
  const needed: [("prefill" | "decode" | "regular"), EngineConfig[]][] =
    prefill.length > 0 && decode.length > 0 ? [["prefill", prefill], ["decode", decode]] : [["regular", of(pools.regular)]];
  let saturated = false;
  for (const [role, list] of needed) {
    const usable = list.filter((e) => cond.usable(e));
    if (usable.length === 0) return "down";
    if (usable.every((e) => cond.busy(e, role))) saturated = true;
  }
  return saturated ? "saturated" : "ready";
}

/** Every cluster of the model as a candidate, placed where the config says. */
export function clusterCandidates(pools: LoadedModel, names: readonly string[], described: Record<string, ClusterConfig>, transports: ReadonlySet<string>, cond: EngineCondition): ClusterCandidate[] {
  return names.map((name) => {
    const place = Object.hasOwn(described, name) ? described[name]! : undefined;
    return { name, ...(place ? { location: { lat: place.lat, lon: place.lon } } : {}), state: clusterState(poolsInCluster(pools, name), transports, cond) };
  });
}
