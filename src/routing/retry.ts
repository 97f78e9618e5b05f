// Retry decisions (pd-reference 2.10, 7.5). Pure: the pipeline asks whether to try again, how
// long to wait and which engines the next attempt may use; it never retries once a byte has
// reached the client. One deadline bounds every attempt of a request (issue 32): retries
// multiplying per-leg timeouts once kept a client waiting five prefill timeouts long.
import { RETRYABLE_STATUSES } from "../core/errors.js";

export interface RetrySettings {
  max_retries: number;
  initial_backoff_ms: number;
  max_backoff_ms: number;
  backoff_multiplier: number;
  jitter_factor: number;
  max_total_backoff_ms: number;
  disabled: boolean;
  /** The request's deadline for its answer to start (ms since its first attempt began). */
  deadline_ms: number;
}

/** A retry is not started with less of the deadline left than this: it could hardly finish,
 *  and its own timeout would replace the first failure, the real cause, in the client's error. */
export const MIN_ATTEMPT_MS = 1_000;

/** Delay before retry `attempt` (0-based: the wait after the first failure is attempt 0). */
export function backoffMs(attempt: number, s: RetrySettings, random: () => number = Math.random): number {
  const base = Math.min(s.initial_backoff_ms * s.backoff_multiplier ** attempt, s.max_backoff_ms);
  const jitter = base * s.jitter_factor * (2 * random() - 1);
  return Math.max(0, Math.round(base + jitter));
}

export interface RetryState {
  /** Attempts made so far (1 after the first). */
  attempts: number;
  /** Backoff spent so far (ms). */
  backoffSpentMs: number;
  /** Time since the first attempt began (ms); 0 when unknown. */
  elapsedMs?: number;
}

/** The wait before the next attempt, or undefined when the request must fail now. */
export function nextRetryDelay(status: number, bytesSent: boolean, state: RetryState, s: RetrySettings, random?: () => number): number | undefined {
  if (s.disabled || bytesSent || !RETRYABLE_STATUSES.has(status)) return undefined;
  if (state.attempts >= s.max_retries) return undefined;
  const delay = backoffMs(state.attempts - 1, s, random);
  if (state.backoffSpentMs + delay > s.max_total_backoff_ms) return undefined;
  if ((state.elapsedMs ?? 0) + delay + MIN_ATTEMPT_MS > s.deadline_ms) return undefined;
  return delay;
}

/** What a failed engine is to the request's later attempts: `never` picked again (it hung:
 *  a second try would cost another whole timeout), or `avoid`ed while another engine of its
 *  pool can take the attempt (a fast failure: trying it again costs little). */
export function exclusionAfter(code: string): "never" | "avoid" {
  return code.endsWith("_timeout") ? "never" : "avoid";
}
