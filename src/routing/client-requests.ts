// Which engines serve which client request in this isolate, so a client's Abort reaches the
// legs of its own request (under the engine-side id of the attempt now running). An entry
// records its owner (the data-plane credential it came with), and an Abort from anyone else
// does not see it. Entries leave when the request ends.
import type { EngineTarget } from "../core/types.js";

export interface ServingEntry {
  /** The engine-side id of the attempt now running (attempts after the first add "-<n>"). */
  engineRequestId: string;
  engines: EngineTarget[];
  owner: string;
}

export class ClientRequests {
  private readonly byId = new Map<string, ServingEntry>();

  /** Records the attempt now serving `clientRequestId`; the returned function forgets it. */
  track(clientRequestId: string, entry: ServingEntry): () => void {
    this.byId.set(clientRequestId, entry);
    return () => {
      if (this.byId.get(clientRequestId) === entry) this.byId.delete(clientRequestId);
    };
  }

  /** The entry for an id, only for the owner that started it. */
  serving(clientRequestId: string, owner: string): ServingEntry | undefined {
    const e = this.byId.get(clientRequestId);
    return e && e.owner === owner ? e : undefined;
  }

  get size(): number {
    return this.byId.size;
  }

  private readonly abortsInFlight = new Map<string, number>();

  /** Takes one of the owner's Abort slots; undefined when all `limit` are in use. The
   *  returned function gives it back (once). */
  takeAbortSlot(owner: string, limit: number): (() => void) | undefined {
    const n = this.abortsInFlight.get(owner) ?? 0;
    if (n >= limit) return undefined;
    this.abortsInFlight.set(owner, n + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.abortsInFlight.get(owner) ?? 1) - 1;
      if (left <= 0) this.abortsInFlight.delete(owner);
      else this.abortsInFlight.set(owner, left);
    };
  }
}

/** The engine-side id of a client's request: the client's own id on an open data plane,
 *  else suffixed with its credential's tag, so ids of different keys never collide at an
 *  engine and an Abort under one key cannot name another key's request. */
export function engineRequestIdFor(owner: string, clientRequestId: string): string {
  return owner === OPEN_OWNER ? clientRequestId : `${clientRequestId}.${owner}`;
}

/** The owner of every request on an open data plane (no credentials). */
export const OPEN_OWNER = "open";
