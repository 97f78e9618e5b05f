// Client Abort calls coalesced per engine: at most one Abort RPC in flight per engine per
// isolate; ids that arrive while it runs wait and go together in the next one. Why: an Abort
// flood (many calls, each with up to 64 ids) otherwise turns into as many RPCs per engine,
// costing the engines and this isolate's event loop what other tenants' requests need. A lone
// Abort still goes out at once. Waiting ids are bounded; beyond the bound a call is refused
// (the caller answers 429) rather than queued without end.
//
// Each RPC is sent by a call that waits for it (the first of its batch), never by a call that
// has already answered: on Workers, I/O started for a request that has completed is
// cancelled. A queue whose sender vanished (its client went away mid-RPC) is taken over by the
// next call once the RPC would have timed out.
import type { EngineTarget } from "../core/types.js";

export type SendAbort = (engine: EngineTarget, ids: string[]) => Promise<void>;

type Wake = "sent" | { lead: Waiting[] };

interface Waiting {
  ids: string[];
  wake: (w: Wake) => void;
}

interface EngineQueue {
  engine: EngineTarget;
  waiting: Waiting[];
  waitingIds: number;
  /** When the RPC in flight was started; undefined when none is. */
  sendingSince: number | undefined;
}

export interface AbortBatchLimits {
  /** Most ids in one RPC. */
  maxIdsPerRpc: number;
  /** Most ids waiting per engine; a call that would exceed it is refused. */
  maxWaitingIds: number;
  /** An RPC in flight longer than this is taken to be abandoned. */
  stalledAfterMs: number;
}

const DEFAULTS: AbortBatchLimits = { maxIdsPerRpc: 1024, maxWaitingIds: 8192, stalledAfterMs: 6_000 };

export class AbortBatches {
  private readonly queues = new Map<string, EngineQueue>();
  private readonly limits: AbortBatchLimits;

  constructor(
    private readonly send: SendAbort,
    limits: Partial<AbortBatchLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULTS, ...limits };
  }

  /** Resolves true once an RPC carrying `ids` to `engine` has answered (or failed: `send`
   *  reports its own failures); false at once when the engine's queue is full. */
  async abort(engine: EngineTarget, ids: string[]): Promise<boolean> {
    let q = this.queues.get(engine.name);
    if (!q) this.queues.set(engine.name, (q = { engine, waiting: [], waitingIds: 0, sendingSince: undefined }));
    const self: Waiting = { ids, wake: () => undefined };
    if (q.sendingSince === undefined || this.now() - q.sendingSince > this.limits.stalledAfterMs) {
      // Nothing in flight (or its sender is gone): this call sends, with whatever waits.
      const batch = [self, ...this.take(q, ids.length)];
      await this.lead(q, batch);
      return true;
    }
    if (q.waitingIds + ids.length > this.limits.maxWaitingIds) return false;
    const woken = await new Promise<Wake>((resolve) => {
      self.wake = resolve;
      q.waiting.push(self);
      q.waitingIds += ids.length;
    });
    if (woken !== "sent") await this.lead(q, woken.lead);
    return true;
  }

  /** Ids waiting for an engine (tests, admin). */
  waitingFor(engineName: string): number {
    return this.queues.get(engineName)?.waitingIds ?? 0;
  }

  /** Sends one batch (its first member is the caller), wakes the others, then hands the next
   *  batch to its first member. */
  private async lead(q: EngineQueue, batch: Waiting[]): Promise<void> {
    q.sendingSince = this.now();
    try {
      await this.send(q.engine, batch.flatMap((w) => w.ids));
    } catch {
      // `send` reports its own failures; a failed batch is not retried.
    }
    for (const w of batch.slice(1)) w.wake("sent");
    const next = this.take(q, 0);
    if (next.length > 0) {
      next[0]!.wake({ lead: next });
    } else {
      q.sendingSince = undefined;
      if (this.queues.get(q.engine.name) === q) this.queues.delete(q.engine.name);
    }
  }

  /** Waiting calls in arrival order, whole, while the RPC stays within maxIdsPerRpc (counting
   *  `already` ids); at least one when the batch is empty so far. */
  private take(q: EngineQueue, already: number): Waiting[] {
    let n = already;
    let k = 0;
    while (k < q.waiting.length && ((k === 0 && already === 0) || n + q.waiting[k]!.ids.length <= this.limits.maxIdsPerRpc)) n += q.waiting[k++]!.ids.length;
    q.waitingIds -= n - already;
    return q.waiting.splice(0, k);
  }
}
