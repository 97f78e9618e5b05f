// One simulated vLLM engine: its configuration, counters, pinned KV, fault list and running
// requests, plus both ends of the KV side channel. Listeners live in cluster.ts; the wire
// surfaces (grpc-service.ts, openai-api.ts, sim-routes.ts) call into this class.
import { FaultBook } from "./faults.js";
import { classifyKv, handoffKeyFromBody, type KvParams, type PullTarget } from "./kv-params.js";
import { KvStore } from "./kv-store.js";
import { Run, type GenInput, type RunHost } from "./run.js";
import { engineConfig, type EngineConfig } from "./spec.js";
import { Stats } from "./stats.js";
import type { EngineSpec, EngineStats, RecordedRequest } from "./types.js";

const SIDE_CHANNEL_TIMEOUT_MS = 5_000;

export interface SideChannelReply {
  status: number;
  body: Record<string, unknown>;
}

export class SimEngine implements RunHost {
  readonly cfg: EngineConfig;
  readonly stats: Stats;
  readonly kv: KvStore;
  readonly faults: FaultBook;
  /** Set by the cluster once the HTTP listener is bound. */
  httpPort = 0;
  /** The cluster's network delay (ms) before each request from outside it; set by the cluster. */
  networkDelayMs = 0;
  readonly startedAt = Date.now();
  private readonly runs = new Map<string, Set<Run>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;

  constructor(readonly spec: EngineSpec, recentRequests?: number) {
    this.cfg = engineConfig(spec, recentRequests);
    this.stats = new Stats(this.cfg);
    this.faults = new FaultBook(spec.faults ?? []);
    this.kv = new KvStore(this.cfg.leaseMs, { onLeaseExpired: () => this.stats.add("leasesExpired") });
  }

  // ---- requests -------------------------------------------------------------------------

  /** Counts, records and starts a generation request; the caller consumes run.events. */
  startRun(input: GenInput): Run {
    const run = new Run(this, input);
    run.start();
    return run;
  }

  record(r: RecordedRequest): void {
    this.stats.record(r);
  }

  register(run: Run): void {
    let set = this.runs.get(run.requestId);
    if (!set) this.runs.set(run.requestId, (set = new Set()));
    set.add(run);
  }

  unregister(run: Run): void {
    const set = this.runs.get(run.requestId);
    set?.delete(run);
    if (set?.size === 0) this.runs.delete(run.requestId);
  }

  /** Abort RPC: stops the named requests that are still running, which frees what they pinned.
   *  A finished request's handoff stays pinned (vLLM PR 25067, "[NIXL] Ignore abort on
   *  already-finished request": a decode engine may still pull it), counted in abortsIgnored.
   *  Resolves once any early releases to producers have been acknowledged. */
  async abort(requestIds: string[]): Promise<void> {
    this.stats.recordAbort(requestIds);
    const waits: Promise<void>[] = [];
    for (const id of requestIds) {
      for (const run of [...(this.runs.get(id) ?? [])]) waits.push(run.abort());
      if (this.kv.holdsHandoffOf(id)) this.stats.add("abortsIgnored");
    }
    await Promise.all(waits);
  }

  get activeRequests(): number {
    let n = 0;
    for (const set of this.runs.values()) n += set.size;
    return n;
  }

  loads(): { running: number; waiting: number; tokenUsage: number } {
    let running = 0;
    let waiting = 0;
    let active = 0;
    for (const set of this.runs.values()) {
      for (const run of set) {
        if (run.phase === "queued") waiting++;
        else running++;
        active += run.activeBlocks;
      }
    }
    const used = this.kv.blocksPinned + active;
    return { running, waiting, tokenUsage: Math.min(1, used / this.cfg.kvCapacityBlocks) };
  }

  snapshot(): EngineStats {
    return this.stats.snapshot({
      blocksPinned: this.kv.blocksPinned,
      handoffsPinned: this.kv.handoffCount,
      activeRequests: this.activeRequests,
    });
  }

  /** Zero the counters and recent list; `hard` also frees every pinned handoff. */
  reset(hard: boolean): void {
    this.stats.reset();
    if (hard) this.kv.clear();
  }

  // ---- side channel: producer end ---------------------------------------------------------

  /** POST {path}/pull: a decode engine consumes a handoff; 409 when it cannot be served. */
  servePull(path: "/sim/kv" | "/sim/mooncake", body: Record<string, unknown>): SideChannelReply {
    const key = handoffKeyFromBody(path, body);
    if (key === undefined) return { status: 400, body: { error: "request_id or transfer_id is required" } };
    // No transfer path between clusters: the pull fails, and the handoff stays pinned.
    if (typeof body.requester_cluster === "string" && body.requester_cluster !== this.cfg.cluster) {
      this.stats.add("crossClusterPulls");
      this.stats.add("kvPullsRefused");
      return { status: 409, body: { error: "cross_cluster", key, cluster: this.cfg.cluster } };
    }
    const engineId = typeof body.remote_engine_id === "string" ? body.remote_engine_id : undefined;
    const expect =
      path === "/sim/kv"
        ? { engineId, blockIds: Array.isArray(body.remote_block_ids) ? (body.remote_block_ids as number[]) : [] }
        : { engineId: typeof body.transfer_id === "string" ? engineId : undefined };
    const result = this.kv.pull(key, expect);
    if (typeof result === "string") {
      this.stats.add("kvPullsRefused");
      return { status: 409, body: { error: result, key } };
    }
    this.stats.add("kvPullsServed");
    return { status: 200, body: { ok: true, blocks: result.blockIds.length } };
  }

  /** POST {path}/release: the decode side rejected the transfer; free the blocks now. */
  serveRelease(path: "/sim/kv" | "/sim/mooncake", body: Record<string, unknown>): SideChannelReply {
    const key = handoffKeyFromBody(path, body);
    if (key === undefined) return { status: 400, body: { error: "request_id or transfer_id is required" } };
    const freed = this.kv.free(key);
    if (freed) this.stats.add("transfersRejected");
    return { status: 200, body: { released: freed !== undefined } };
  }

  // ---- side channel: consumer end ---------------------------------------------------------

  pullKv(target: PullTarget): Promise<boolean> {
    return this.post(target, "pull").then((status) => status === 200);
  }

  /** This engine refused a request before admitting it (validation, context window, bad
   *  params). If the request was to pull a handoff, tell the owning prefill engine to free it
   *  now, as vLLM PR 41269's notify_kv_transfer_request_rejected (and the gRPC servicer's
   *  _notify_kv_transfer_rejected) do. The owner is found from the params themselves (NIXL
   *  remote_host/remote_port, Mooncake remote_bootstrap_addr), so a rejection carrying no
   *  usable params frees nothing and the handoff waits for its lease. */
  async rejectBeforeAdmission(params: KvParams | undefined, requestId: string): Promise<void> {
    const intent = classifyKv(this.cfg, params, requestId, 0);
    if (intent.kind !== "pull") return;
    this.stats.add("kvReleasesSent");
    await this.releaseKv(intent.target);
  }

  releaseKv(target: PullTarget): Promise<void> {
    if (this.closing) return Promise.resolve();
    return this.post(target, "release").then(() => undefined);
  }

  /** POST to the producer's side channel; resolves the HTTP status, or 0 when unreachable. */
  private post(target: PullTarget, verb: "pull" | "release"): Promise<number> {
    if (target.baseUrl === undefined) return Promise.resolve(0);
    const p = fetch(`${target.baseUrl}${target.path}/${verb}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(target.body),
      signal: AbortSignal.timeout(SIDE_CHANNEL_TIMEOUT_MS),
    })
      .then(async (res) => {
        await res.arrayBuffer();
        return res.status;
      })
      .catch(() => 0);
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  /** Stops every request and lease timer. Called by the cluster after its listeners closed. */
  async close(): Promise<void> {
    this.closing = true;
    const runs = [...this.runs.values()].flatMap((s) => [...s]);
    await Promise.all(runs.map((r) => r.abort()));
    this.kv.clear();
    await Promise.all([...this.inFlight]);
  }
}
