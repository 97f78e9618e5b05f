// Cluster choice for one attempt, on this request's view of the engines: each cluster's state
// from shared health and breakers, this isolate's recent pushbacks, the request's own failed
// engines and the queue limits the decider reads; then chooseCluster (clusters.ts). The
// selection that follows sees only the chosen cluster's engines.
import type { LoadedConfig, LoadedModel } from "../config/load.js";
import type { EngineConfig } from "../config/schema.js";
import { engineRoutable } from "./admission.js";
import { chooseCluster, type ClusterReason } from "./clusters.js";
import { clusterCandidates, clustersOfModel, poolsInCluster, type EngineCondition } from "./cluster-view.js";
import type { GeoPoint } from "./geo.js";
import type { IsolateState } from "./isolate.js";
import type { RoutingSnapshot } from "./snapshot.js";

export interface ClusterRouteInput {
  config: LoadedConfig;
  routing: RoutingSnapshot;
  isolate: IsolateState;
  waitUntil(promise: Promise<unknown>): void;
  /** The client's location, read only when there is a cluster to choose. */
  client(): GeoPoint | undefined;
  model: string;
  transports: ReadonlySet<string>;
  routingKey?: string;
  /** Engines that failed earlier attempts of this request (busy), and that hung (unusable). */
  exclude: ReadonlySet<string>;
  never: ReadonlySet<string>;
  now?: number;
}

export interface ClusterRoute {
  cluster: string;
  reason: ClusterReason;
  /** The model's pools cut down to the cluster: what selection picks from. */
  models: Record<string, LoadedModel>;
}

/** Per model pools object: its clusters (the routed view rebuilds pools when engines change). */
const clusterNames = new WeakMap<LoadedModel, string[]>();

/** undefined when the model's engines are all in one cluster: nothing to choose. */
export function routeCluster(input: ClusterRouteInput): ClusterRoute | undefined {
  const { model, routing, config } = input;
  const pools = Object.hasOwn(routing.models, model) ? routing.models[model]! : undefined;
  if (!pools) return undefined;
  let names = clusterNames.get(pools);
  if (!names) clusterNames.set(pools, (names = clustersOfModel(pools, config.clusters)));
  if (names.length < 2) return undefined;
  const candidates = clusterCandidates(pools, names, config.clusters, input.transports, engineCondition(input, pools));
  const sticky = config.geo.sticky && input.routingKey !== undefined ? input.isolate.clusters.stickyCluster(input.routingKey) : undefined;
  const client = input.client();
  const choice = chooseCluster({ candidates, ...(client ? { client } : {}), ...(sticky !== undefined ? { sticky } : {}) });
  // Every cluster is down: the nearest one's selection then fails naming its engines.
  const cluster = choice?.cluster ?? candidates[0]!.name;
  const models = Object.create(null) as Record<string, LoadedModel>;
  models[model] = poolsInCluster(pools, cluster);
  return { cluster, reason: choice?.reason ?? "nearest", models };
}

/** How engines look to cluster choice for one request (or, with nothing excluded, for the
 *  admin API's view of a cluster). */
export function engineCondition(input: Pick<ClusterRouteInput, "config" | "routing" | "isolate" | "waitUntil" | "exclude" | "never" | "now">, pools: LoadedModel): EngineCondition {
  const routable = engineRoutable(input.routing, input.isolate.breakers, input.config.breaker);
  const now = input.now ?? Date.now();
  const pushbackMs = input.config.geo.pushback_ms;
  const queueLimit = pools.pd.decode_queue_limit ?? pools.pd.prefill_queue_limit;
  const sources = { settings: input.config.loads, waitUntil: input.waitUntil };
  const overQueue = (e: EngineConfig) => {
    if (queueLimit === undefined) return false;
    const waiting = input.isolate.loadReadings.waiting(e, sources);
    return waiting !== undefined && waiting >= queueLimit;
  };
  return {
    usable: (e) => !input.never.has(e.name) && routable(e),
    // A full prefill pool is the decider's to handle (it skips the leg), not a reason to move.
    busy: (e, role) => input.exclude.has(e.name) || input.isolate.clusters.pushedBack(e.name, now, pushbackMs) || (role !== "prefill" && overQueue(e)),
  };
}
