// Engine health state machine (pd-reference 7.3). Pure: one probe result in, the new state
// out, so the prober (cron / Durable Object alarm) and a table test share it.

export type HealthStatus = "pending" | "ready" | "not_ready" | "failed";

export interface HealthSettings {
  success_threshold: number;
  failure_threshold: number;
}

export interface EngineHealth {
  status: HealthStatus;
  consecutiveSuccesses: number;
  consecutiveFailures: number;
  /** Probes made while pending, for the pending -> failed limit. */
  pendingProbes: number;
  lastProbeAt?: number;
  lastError?: string;
}

export function newHealth(): EngineHealth {
  return { status: "pending", consecutiveSuccesses: 0, consecutiveFailures: 0, pendingProbes: 0 };
}

/** Ready engines are routable, and so are engines not yet proven either way (unknown or
 *  pending): a fresh gateway must serve before its first probes complete. */
export function isRoutable(h: EngineHealth | undefined): boolean {
  return h === undefined || h.status === "ready" || h.status === "pending";
}

export function applyProbe(h: EngineHealth, s: HealthSettings, ok: boolean, now: number, error?: string): EngineHealth {
  const next: EngineHealth = { ...h, lastProbeAt: now };
  if (ok) {
    next.consecutiveSuccesses++;
    next.consecutiveFailures = 0;
    delete next.lastError;
  } else {
    next.consecutiveFailures++;
    next.consecutiveSuccesses = 0;
    if (error !== undefined) next.lastError = error;
  }
  switch (h.status) {
    case "pending":
      next.pendingProbes++;
      if (next.consecutiveSuccesses >= s.success_threshold) next.status = "ready";
      else if (next.pendingProbes >= 10 * s.failure_threshold) next.status = "failed";
      // Pending engines are routable here, so a pending engine that keeps failing leaves the
      // rotation like a ready one would.
      else if (next.consecutiveFailures >= s.failure_threshold) next.status = "not_ready";
      break;
    case "ready":
      if (next.consecutiveFailures >= s.failure_threshold) next.status = "not_ready";
      break;
    case "not_ready":
      if (next.consecutiveSuccesses >= s.success_threshold) next.status = "ready";
      else if (next.consecutiveFailures >= 3 * s.failure_threshold) next.status = "failed";
      break;
    case "failed":
      // Terminal upstream; here a failed engine that answers again is brought back, since a
      // gateway in front of autoscaled engines should not need a restart to re-admit one.
      if (next.consecutiveSuccesses >= s.success_threshold) next.status = "ready";
      break;
  }
  return next;
}
