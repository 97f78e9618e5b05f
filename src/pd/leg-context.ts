// What a leg needs from the request that runs it: where its outcome goes, the client's
// signals, waitUntil and the load accounting (leg.ts, leg-driver.ts).
import type { EngineLoads } from "../core/in-flight.js";
import type { EngineTarget, Leg } from "../core/types.js";

/** Where engine outcomes go (breakers, registry, metrics): routing supplies it. */
export interface OutcomeReporter {
  /** `status` is the engine's own answer as HTTP (200 on success), before any mapping. */
  report(engine: EngineTarget, leg: Leg, status: number): void;
}

export interface LegContext {
  model: string;
  /** Told once when a stream handed to the surface ends, however it ends (drained, failed,
   *  cancelled): no extra wrapper around every frame for it. */
  onStreamEnd?(): void;
  /** Fires when the client goes away. */
  clientSignal: AbortSignal;
  /** Fires when the client's Abort call names the request (routing/client-requests.ts): the
   *  engine gets its Abort by the same rule as for a client that went away, and the stream
   *  goes on to the end the engine gives it (finish_reason "abort"). */
  abortRequested?: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  loads: EngineLoads;
  outcomes: OutcomeReporter;
}
