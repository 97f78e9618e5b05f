// Client Abort calls coalesced per engine: at most one Abort RPC in flight per engine per
// isolate; ids that arrive while it runs wait and go together in the next one. Why: an Abort
// flood (many calls, each with up to 64 ids) otherwise turns into as many RPCs per engine,
// costing the engines and this isolate's event loop what other tenants' requests need. A lone
// Abort still goes out at once. Waiting ids are bounded; beyond the bound a call is refused
// (the caller answers 429) rather than queued without end.
//
// Workers rules this design follows: I/O started for a request that has completed is
// cancelled, so each RPC is sent by a call that waits for it (the first of its batch), never
// by one that has answered; and a request whose code awaits only another request's promise is
// killed as hung, so every waiting call also holds a timer of its own. When that timer fires
// first (its sender vanished, e.g. its client went away mid-RPC, or the RPC is slow), the
// call sends its own ids itself: a second Abort for an id is harmless.
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
  /** Counts senders, so one that was presumed gone and taken over knows it. */
  senders: number;
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
    if (!q) this.queues.set(engine.name, (q = { engine, waiting: [], waitingIds: 0, sendingSince: undefined, senders: 0 }));
    const self: Waiting = { ids, wake: () => undefined };
    if (q.sendingSince === undefined || this.now() - q.sendingSince > this.limits.stalledAfterMs) {
      // Nothing in flight (or its sender is gone): this call sends, with whatever waits.
      const batch = [self, ...this.take(q, ids.length)];
      await this.lead(q, batch);
      return true;
    }
    if (q.waitingIds + ids.length > this.limits.maxWaitingIds) return false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const woken = await Promise.race([
      new Promise<Wake>((resolve) => {
        self.wake = resolve;
        q.waiting.push(self);
        q.waitingIds += ids.length;
      }),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), this.limits.stalledAfterMs))),
    ]);
    clearTimeout(timer);
    if (woken === "timeout") {
      this.forget(q, self);
      await this.sendAlone(q.engine, ids);
    } else if (woken !== "sent") {
      await this.lead(q, woken.lead);
    }
    return true;
  }

  /** Takes a call that gave up waiting out of its engine's queue (if it is still there). */
  private forget(q: EngineQueue, w: Waiting): void {
    const i = q.waiting.indexOf(w);
    if (i < 0) return;
    q.waiting.splice(i, 1);
    q.waitingIds -= w.ids.length;
  }

  private async sendAlone(engine: EngineTarget, ids: string[]): Promise<void> {
    try {
      await this.send(engine, ids);
    } catch {
      // `send` reports its own failures.
    }
  }

  /** Ids waiting for an engine (tests, admin). */
  waitingFor(engineName: string): number {
    return this.queues.get(engineName)?.waitingIds ?? 0;
  }

  /** Sends one batch (its first member is the caller), wakes the others, then hands the next
   *  batch to its first member. */
  private async lead(q: EngineQueue, batch: Waiting[]): Promise<void> {
    const sender = ++q.senders;
    q.sendingSince = this.now();
    try {
      await this.send(q.engine, batch.flatMap((w) => w.ids));
    } catch {
      // `send` reports its own failures; a failed batch is not retried.
    }
    for (const w of batch.slice(1)) w.wake("sent");
    // Taken over meanwhile (this sender was presumed gone): the new sender owns the queue.
    if (q.senders !== sender) return;
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
