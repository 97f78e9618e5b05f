// Counters behind GET /sim/stats. Tests assert on these to see what the gateway made the
// engines do (prompt work, pulls, refusals, releases), so every field has one clear trigger.
import type { EngineConfig } from "./spec.js";
import type { EngineStats, RecordedRequest } from "./types.js";

export type Counter =
  | "prefillComputations"
  | "promptTokensComputed"
  | "decodeRequests"
  | "generateRequests"
  | "kvPullsServed"
  | "kvPullsRefused"
  | "kvRecomputes"
  | "kvSiblingHazards"
  | "leasesExpired"
  | "transfersRejected"
  | "abortsReceived"
  | "streamsCancelled"
  | "abortsDuringPull"
  | "kvPullsCompleted"
  | "kvReleasesSent"
  | "connectionsDropped"
  | "abortsIgnored"
  | "crossClusterPulls";

const COUNTERS: Counter[] = [
  "prefillComputations", "promptTokensComputed", "decodeRequests", "generateRequests",
  "kvPullsServed", "kvPullsRefused", "kvRecomputes", "kvSiblingHazards", "leasesExpired",
  "transfersRejected", "abortsReceived", "streamsCancelled", "abortsDuringPull",
  "kvPullsCompleted", "kvReleasesSent", "connectionsDropped", "abortsIgnored", "crossClusterPulls",
];

export interface LiveState {
  blocksPinned: number;
  handoffsPinned: number;
  activeRequests: number;
}

export class Stats {
  private counts = new Map<Counter, number>();
  private abortedIds: string[] = [];
  private recent: RecordedRequest[] = [];
  lastReceiveAt = 0;

  constructor(private readonly cfg: EngineConfig) {
    this.reset();
  }

  add(c: Counter, by = 1): void {
    this.counts.set(c, (this.counts.get(c) ?? 0) + by);
  }

  get(c: Counter): number {
    return this.counts.get(c) ?? 0;
  }

  recordAbort(ids: string[]): void {
    this.add("abortsReceived");
    this.abortedIds.push(...ids);
  }

  record(r: RecordedRequest): void {
    this.lastReceiveAt = r.receivedAt;
    if (this.cfg.recentRequests <= 0) return;
    this.recent.push(r);
    if (this.recent.length > this.cfg.recentRequests) this.recent.splice(0, this.recent.length - this.cfg.recentRequests);
  }

  reset(): void {
    for (const c of COUNTERS) this.counts.set(c, 0);
    this.abortedIds = [];
    this.recent = [];
  }

  snapshot(live: LiveState): EngineStats {
    const c = (k: Counter) => this.get(k);
    return {
      engine: this.cfg.name,
      cluster: this.cfg.cluster,
      role: this.cfg.role,
      kvConnector: this.cfg.kvConnector,
      prefillComputations: c("prefillComputations"),
      promptTokensComputed: c("promptTokensComputed"),
      decodeRequests: c("decodeRequests"),
      generateRequests: c("generateRequests"),
      kvPullsServed: c("kvPullsServed"),
      kvPullsRefused: c("kvPullsRefused"),
      kvRecomputes: c("kvRecomputes"),
      kvSiblingHazards: c("kvSiblingHazards"),
      blocksPinned: live.blocksPinned,
      handoffsPinned: live.handoffsPinned,
      leasesExpired: c("leasesExpired"),
      transfersRejected: c("transfersRejected"),
      abortsReceived: c("abortsReceived"),
      abortedRequestIds: [...this.abortedIds],
      abortsIgnored: c("abortsIgnored"),
      streamsCancelled: c("streamsCancelled"),
      abortsDuringPull: c("abortsDuringPull"),
      kvPullsCompleted: c("kvPullsCompleted"),
      kvReleasesSent: c("kvReleasesSent"),
      connectionsDropped: c("connectionsDropped"),
      crossClusterPulls: c("crossClusterPulls"),
      activeRequests: live.activeRequests,
      recent: [...this.recent],
    };
  }
}
