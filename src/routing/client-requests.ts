// The client requests being served in this isolate, so a client's Abort call reaches its own
// request: the call asks, and the request's legs abort by the same rule as for a client that
// left (pd/leg.ts: decode deferred until its first frame while it holds a KV handoff), on
// whichever engines serve it now (after a retry or a decode failover too). An entry records
// its owner (the data-plane credential it came with), and an Abort from anyone else does not
// see it. Entries leave when the request ends.
//
// Why a promise: an Abort call is a request of its own, which has answered (and may be gone)
// by the time a deferred abort fires. So the call only resolves a promise the served request
// created; workerd runs that promise's reactions in the request that created it, so the
// leg's abort (its timer, its waitUntil, its engine call) belongs to the served request.

export interface TrackedRequest {
  /** Fires (in the served request) when an Abort call of its owner names it. */
  abortRequested: AbortSignal;
  /** Forgets the request (once it ended). */
  untrack(): void;
}

interface ServingEntry {
  owner: string;
  requestAbort(): void;
}

export class ClientRequests {
  private readonly byId = new Map<string, ServingEntry>();

  /** Records that `clientRequestId` is being served here; called in the served request. */
  track(clientRequestId: string, owner: string): TrackedRequest {
    const controller = new AbortController();
    let ask: () => void = () => undefined;
    void new Promise<void>((resolve) => (ask = resolve)).then(() => controller.abort());
    const entry: ServingEntry = { owner, requestAbort: () => ask() };
    this.byId.set(clientRequestId, entry);
    return {
      abortRequested: controller.signal,
      untrack: () => {
        if (this.byId.get(clientRequestId) === entry) this.byId.delete(clientRequestId);
      },
    };
  }

  /** An Abort call of `owner` for `clientRequestId`: true when the request is served here
   *  (its legs abort by the leg rule), false when not (or not for this owner). */
  requestAbort(clientRequestId: string, owner: string): boolean {
    const e = this.byId.get(clientRequestId);
    if (!e || e.owner !== owner) return false;
    e.requestAbort();
    return true;
  }

  get size(): number {
    return this.byId.size;
  }

  /** Per owner, the Abort ids it may still send this second (a token bucket). */
  private readonly abortIdBudgets = new Map<string, { tokens: number; at: number }>();

  /** Spends `ids` of the owner's Abort budget (`perSecond` ids a second, a one-second burst);
   *  false, spending nothing, when the budget does not cover them. Why: every id an Abort
   *  names goes to engines, and a key that floods Abort would otherwise make the engines and
   *  this isolate work for it as fast as it can send. */
  spendAbortIds(owner: string, ids: number, perSecond: number, now: number = Date.now()): boolean {
    const b = this.abortIdBudgets.get(owner) ?? { tokens: perSecond, at: now };
    b.tokens = Math.min(perSecond, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    this.abortIdBudgets.set(owner, b);
    if (ids > b.tokens) return false;
    b.tokens -= ids;
    return true;
  }

  /** Per owner, when each Abort slot in use lapses. */
  private readonly abortLeases = new Map<string, number[]>();

  /** Takes one of the owner's Abort slots; undefined when all `limit` are in use. The
   *  returned function gives it back (once). A slot is a lease: one whose call never gave it
   *  back (a request the runtime cancelled runs no `finally`) lapses after `leaseMs`. */
  takeAbortSlot(owner: string, limit: number, now: number = Date.now(), leaseMs: number = ABORT_SLOT_LEASE_MS): (() => void) | undefined {
    const leases = (this.abortLeases.get(owner) ?? []).filter((until) => until > now);
    if (leases.length >= limit) {
      this.abortLeases.set(owner, leases);
      return undefined;
    }
    const until = now + leaseMs;
    leases.push(until);
    this.abortLeases.set(owner, leases);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = this.abortLeases.get(owner);
      const i = left?.indexOf(until) ?? -1;
      if (left && i >= 0) left.splice(i, 1);
      if (left && left.length === 0) this.abortLeases.delete(owner);
    };
  }
}

/** Longer than an Abort call can take (its RPCs time out after 5 s; a waiting call gives up
 *  after 6 s and sends its own). */
export const ABORT_SLOT_LEASE_MS = 15_000;

/** The engine-side id of a client's request: the client's own id on an open data plane,
 *  else suffixed with its credential's tag, so ids of different keys never collide at an
 *  engine and an Abort under one key cannot name another key's request. */
export function engineRequestIdFor(owner: string, clientRequestId: string): string {
  return owner === OPEN_OWNER ? clientRequestId : `${clientRequestId}.${owner}`;
}

/** The owner of every request on an open data plane (no credentials). */
export const OPEN_OWNER = "open";
