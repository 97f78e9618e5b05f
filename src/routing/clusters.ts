// Which cluster serves a request (ARCHITECTURE decision 18): the nearest one to the client that
// can take it. A cluster is "down" when a pool the request needs has no engine that may take
// traffic (health failing, breakers open), "saturated" when every such engine of a needed pool
// is pushing back (429s, queue limits) or already failed this request. Stickiness keeps a
// routing key where it was while that cluster is ready. Pure: the table test reaches every rule.
import { haversineKm, type GeoPoint } from "./geo.js";

export type ClusterState = "ready" | "saturated" | "down";

export interface ClusterCandidate {
  name: string;
  /** Unknown for a cluster the config does not place: ranked after every placed one. */
  location?: GeoPoint;
  state: ClusterState;
}

export interface ClusterChoiceInput {
  /** In the config's order, which breaks distance ties (and orders them all when the client's
   *  location is unknown). */
  candidates: readonly ClusterCandidate[];
  client?: GeoPoint;
  /** The cluster this request's routing key was last served by (stickiness), if any. */
  sticky?: string;
}

/** Why the cluster was chosen: "nearest" (the nearest that is not down), "sticky", "failover"
 *  (a nearer one is saturated), "saturated" (every cluster that is not down is saturated: the
 *  nearest of them still gets to say so itself). */
export type ClusterReason = "nearest" | "sticky" | "failover" | "saturated";

export interface ClusterChoice {
  cluster: string;
  reason: ClusterReason;
}

/** undefined when every cluster is down. */
export function chooseCluster(input: ClusterChoiceInput): ClusterChoice | undefined {
  const up = rankByDistance(input.candidates, input.client).filter((c) => c.state !== "down");
  if (up.length === 0) return undefined;
  if (input.sticky !== undefined && up.some((c) => c.name === input.sticky && c.state === "ready")) return { cluster: input.sticky, reason: "sticky" };
  const ready = up.find((c) => c.state === "ready");
  if (!ready) return { cluster: up[0]!.name, reason: "saturated" };
  return { cluster: ready.name, reason: ready === up[0] ? "nearest" : "failover" };
}

/** Nearest first; ties (and an unknown client location) keep the given order. */
export function rankByDistance(candidates: readonly ClusterCandidate[], client: GeoPoint | undefined): ClusterCandidate[] {
  const distance = (c: ClusterCandidate) => (c.location === undefined ? Number.POSITIVE_INFINITY : client === undefined ? 0 : haversineKm(client, c.location));
  return candidates
    .map((c, i) => ({ c, i, d: distance(c) }))
    .sort((a, b) => a.d - b.d || a.i - b.i)
    .map((x) => x.c);
}
