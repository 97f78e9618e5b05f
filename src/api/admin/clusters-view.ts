// /admin/engines groups engines by cluster: each cluster with its place, its engines and its
// state per model as cluster choice sees it from this isolate (clusters.ts: ready, saturated,
// down). The state is this isolate's view: shared health and breakers, this isolate's own
// breakers and recent pushbacks.
import type { GatewayContext } from "../../context.js";
import { engineCondition } from "../../routing/cluster-route.js";
import { clusterState, clustersOfModel, poolsInCluster } from "../../routing/cluster-view.js";
import type { ClusterState } from "../../routing/clusters.js";

const ALL_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web", "openai-http"]);
const NONE: ReadonlySet<string> = new Set();

export interface ClusterView {
  name: string;
  region: string | null;
  lat: number | null;
  lon: number | null;
  /** "degraded" when the models disagree. */
  state: ClusterState | "degraded" | "empty";
  models: Record<string, ClusterState>;
  /** Engine ids (config and active registry engines), every pool. */
  engines: string[];
}

export function clustersView(gw: GatewayContext, model: string | undefined): ClusterView[] {
  const { config, routing } = gw;
  const byName = new Map<string, ClusterView>();
  const view = (name: string): ClusterView => {
    let v = byName.get(name);
    if (!v) {
      const place = Object.hasOwn(config.clusters, name) ? config.clusters[name] : undefined;
      v = { name, region: place?.region ?? null, lat: place?.lat ?? null, lon: place?.lon ?? null, state: "empty", models: {}, engines: [] };
      byName.set(name, v);
    }
    return v;
  };
  for (const name of Object.keys(config.clusters)) view(name);
  for (const [m, pools] of Object.entries(routing.models)) {
    if (model !== undefined && m !== model) continue;
    const cond = engineCondition({ config, routing, isolate: gw.isolate, waitUntil: gw.waitUntil, exclude: NONE, never: NONE }, pools);
    for (const name of clustersOfModel(pools, config.clusters)) {
      const v = view(name);
      const here = poolsInCluster(pools, name);
      v.models[m] = clusterState(here, ALL_TRANSPORTS, cond);
      for (const role of ["prefill", "decode", "encode", "regular"] as const) for (const e of here[role]) v.engines.push(e.name);
    }
  }
  for (const v of byName.values()) {
    const states = new Set(Object.values(v.models));
    v.state = states.size === 0 ? "empty" : states.size === 1 ? [...states][0]! : "degraded";
  }
  return [...byName.values()];
}
