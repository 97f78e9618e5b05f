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
// killed as hung, so every waiting call also holds a timer of its own, re-armed while a live
// sender works. Only the head of the queue is handed the next RPC; the others stay queued, so
// when the head is gone (its client left) the first of them whose timer sees the sender
// stalled takes over with everything still waiting. A call already in a batch whose sender
// stalled sends its own ids: a second Abort for an id is harmless.
import type { EngineTarget } from "../core/types.js";

export type SendAbort = (engine: EngineTarget, ids: string[]) => Promise<void>;

type Wake = "sent" | "lead" | "timer";

interface Waiting {
  ids: string[];
  /** Set when a batch carrying these ids is being sent, with that RPC's start. */
  batchSince?: number;
  /** A wake-up that came while the call was not listening (kept, not lost). */
  pending?: "sent" | "lead";
  listen?: (w: "sent" | "lead") => void;
}

interface EngineQueue {
  engine: EngineTarget;
  waiting: Waiting[];
  waitingIds: number;
  /** When the RPC in flight (or the hand-off to the next sender) started; undefined: none. */
  sendingSince: number | undefined;
}

export interface AbortBatchLimits {
  /** Most ids in one RPC. */
  maxIdsPerRpc: number;
  /** Most ids waiting per engine; a call that would exceed it is refused. */
  maxWaitingIds: number;
  /** A sender silent for longer than this is taken to be gone. */
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
    const self: Waiting = { ids };
    if (!this.senderAlive(q)) {
      await this.lead(q, self);
      return true;
    }
    if (q.waitingIds + ids.length > this.limits.maxWaitingIds) return false;
    q.waiting.push(self);
    q.waitingIds += ids.length;
    for (;;) {
      const woken = await this.wait(self);
      if (woken === "sent") return true;
      if (woken === "lead") break;
      if (self.batchSince !== undefined) {
        // In a batch whose sender went silent: send these ids ourselves.
        if (this.now() - self.batchSince > this.limits.stalledAfterMs) {
          await this.sendQuietly(q.engine, ids);
          return true;
        }
      } else if (!this.senderAlive(q)) {
        break; // still queued, and the sender is gone: take over
      }
    }
    await this.lead(q, self);
    return true;
  }

  /** Ids waiting for an engine (tests, admin). */
  waitingFor(engineName: string): number {
    return this.queues.get(engineName)?.waitingIds ?? 0;
  }

  private senderAlive(q: EngineQueue): boolean {
    return q.sendingSince !== undefined && this.now() - q.sendingSince <= this.limits.stalledAfterMs;
  }

  /** The next wake-up, or "timer" after stalledAfterMs (a timer of this call's own request). */
  private async wait(w: Waiting): Promise<Wake> {
    if (w.pending) {
      const p = w.pending;
      delete w.pending;
      return p;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const woken = await Promise.race([
      new Promise<"sent" | "lead">((resolve) => (w.listen = resolve)),
      new Promise<"timer">((resolve) => (timer = setTimeout(() => resolve("timer"), this.limits.stalledAfterMs))),
    ]);
    clearTimeout(timer);
    delete w.listen;
    return woken;
  }

  private wake(w: Waiting, how: "sent" | "lead"): void {
    if (w.listen) w.listen(how);
    else w.pending = how;
  }

  /** Sends `self`'s ids with whatever waits (whole calls, up to maxIdsPerRpc), wakes the
   *  others of the batch, then hands the next RPC to the head of the queue. */
  private async lead(q: EngineQueue, self: Waiting): Promise<void> {
    this.forget(q, self);
    const batch = [self, ...this.take(q, self.ids.length)];
    const startedAt = this.now();
    q.sendingSince = startedAt;
    for (const w of batch) w.batchSince = startedAt;
    await this.sendQuietly(q.engine, batch.flatMap((w) => w.ids));
    for (const w of batch.slice(1)) this.wake(w, "sent");
    if (q.sendingSince !== startedAt) return; // another sender took over meanwhile: its queue now
    const head = q.waiting[0];
    if (head) {
      q.sendingSince = this.now(); // the hand-off: the head has stalledAfterMs to start
      this.wake(head, "lead");
    } else {
      q.sendingSince = undefined;
      if (this.queues.get(q.engine.name) === q) this.queues.delete(q.engine.name);
    }
  }

  private async sendQuietly(engine: EngineTarget, ids: string[]): Promise<void> {
    try {
      await this.send(engine, ids);
    } catch {
      // `send` reports its own failures; a failed batch is not retried.
    }
  }

  /** Takes a call out of its engine's queue (if it is there). */
  private forget(q: EngineQueue, w: Waiting): void {
    const i = q.waiting.indexOf(w);
    if (i < 0) return;
    q.waiting.splice(i, 1);
    q.waitingIds -= w.ids.length;
  }

  /** Waiting calls in arrival order, whole, while the RPC stays within maxIdsPerRpc (counting
   *  `already` ids). */
  private take(q: EngineQueue, already: number): Waiting[] {
    let n = already;
    let k = 0;
    while (k < q.waiting.length && n + q.waiting[k]!.ids.length <= this.limits.maxIdsPerRpc) n += q.waiting[k++]!.ids.length;
    q.waitingIds -= n - already;
    return q.waiting.splice(0, k);
  }
}
