// Pinned KV handoffs on a producing (prefill) engine. A handoff holds its blocks until exactly
// one consumer pulls it, the consumer releases it (transfer rejected), or its lease
// (VLLM_NIXL_ABORT_REQUEST_TIMEOUT) expires:
// the single-consumer property that makes a KV handoff unusable by n>1 decode children.

export interface Handoff {
  /** "nixl:<request id>", "mooncake-xfer:<transfer id>" or "mooncake-req:<request id>". */
  key: string;
  /** Request that produced the blocks. Once it finished, an Abort of that id leaves them
   *  pinned (vLLM PR 25067): only a pull, a decode's rejection notice or the lease frees them. */
  ownerRequestId: string;
  engineId: string;
  blockIds: number[];
  pinnedAt: number;
}

export type PullRefusal = "unknown" | "engine_id_mismatch" | "block_ids_mismatch";

export interface KvStoreEvents {
  onLeaseExpired(h: Handoff): void;
}

export class KvStore {
  private readonly handoffs = new Map<string, { h: Handoff; timer: NodeJS.Timeout }>();
  private nextBlockId = 1;

  constructor(
    private readonly leaseMs: number,
    private readonly events: KvStoreEvents,
  ) {}

  /** Pins `blocks` fresh blocks under `key` (replacing an older handoff with the same key). */
  pin(key: string, ownerRequestId: string, engineId: string, blocks: number): Handoff {
    this.free(key);
    const blockIds: number[] = [];
    for (let i = 0; i < blocks; i++) blockIds.push(this.nextBlockId++);
    const h: Handoff = { key, ownerRequestId, engineId, blockIds, pinnedAt: Date.now() };
    const timer = setTimeout(() => {
      if (this.handoffs.get(key)?.h === h) {
        this.handoffs.delete(key);
        this.events.onLeaseExpired(h);
      }
    }, this.leaseMs);
    // A pinned handoff must not keep a CLI process alive on its own.
    timer.unref();
    this.handoffs.set(key, { h, timer });
    return h;
  }

  /** Consumes the handoff: frees its blocks. Refused if absent or the identifiers disagree. */
  pull(key: string, expect: { engineId?: string; blockIds?: number[] }): Handoff | PullRefusal {
    const entry = this.handoffs.get(key);
    if (!entry) return "unknown";
    if (expect.engineId !== undefined && expect.engineId !== entry.h.engineId) return "engine_id_mismatch";
    if (expect.blockIds !== undefined && !sameIds(expect.blockIds, entry.h.blockIds)) return "block_ids_mismatch";
    this.free(key);
    return entry.h;
  }

  /** Frees the handoff under `key`; returns it if there was one. */
  free(key: string): Handoff | undefined {
    const entry = this.handoffs.get(key);
    if (!entry) return undefined;
    clearTimeout(entry.timer);
    this.handoffs.delete(key);
    return entry.h;
  }

  /** Frees exactly this handoff if it is still pinned (not a newer one under the same key). */
  freeHandoff(h: Handoff): boolean {
    if (this.handoffs.get(h.key)?.h !== h) return false;
    this.free(h.key);
    return true;
  }

  /** Whether a handoff produced by this request id is still pinned. */
  holdsHandoffOf(requestId: string): boolean {
    for (const { h } of this.handoffs.values()) if (h.ownerRequestId === requestId) return true;
    return false;
  }

  clear(): void {
    for (const key of [...this.handoffs.keys()]) this.free(key);
  }

  get handoffCount(): number {
    return this.handoffs.size;
  }

  get blocksPinned(): number {
    let n = 0;
    for (const { h } of this.handoffs.values()) n += h.blockIds.length;
    return n;
  }
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
