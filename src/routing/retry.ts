// Retry decisions (pd-reference 2.10, 7.5). Pure: the executor asks whether to try again and
// how long to wait; it never retries once a byte has reached the client.
import { RETRYABLE_STATUSES } from "../core/errors.js";

export interface RetrySettings {
  max_retries: number;
  initial_backoff_ms: number;
  max_backoff_ms: number;
  backoff_multiplier: number;
  jitter_factor: number;
  max_total_backoff_ms: number;
  disabled: boolean;
}

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
}

/** The wait before the next attempt, or undefined when the request must fail now. */
export function nextRetryDelay(status: number, bytesSent: boolean, state: RetryState, s: RetrySettings, random?: () => number): number | undefined {
  if (s.disabled || bytesSent || !RETRYABLE_STATUSES.has(status)) return undefined;
  if (state.attempts >= s.max_retries) return undefined;
  const delay = backoffMs(state.attempts - 1, s, random);
  if (state.backoffSpentMs + delay > s.max_total_backoff_ms) return undefined;
  return delay;
}
