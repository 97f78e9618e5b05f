// A leg's timeout under its request's deadline (issue 32): the leg's own timeout, cut to what
// is left of the deadline, so retries and slow legs together never outlast it. Pure.

/** At least 1 ms: a leg started past the deadline times out at once, naming its engine. */
export function legTimeoutMs(perLegMs: number, deadlineAt: number | undefined, now: number): number {
  if (deadlineAt === undefined) return perLegMs;
  return Math.max(1, Math.min(perLegMs, deadlineAt - now));
}
