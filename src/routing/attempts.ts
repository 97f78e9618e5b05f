// Runs a request's attempts: a retryable failure before anything reached the client is tried
// again on a newly selected engine set after a jittered backoff, within the attempt and
// backoff budgets. The attempt adds the engines it used to `exclude` so the next one avoids them.
import type { GatewayContext } from "../context.js";
import { GatewayError } from "../pd/errors.js";
import { delay } from "../pd/engine-abort.js";
import { nextRetryDelay, type RetryState } from "./retry.js";

export async function withRetries<T>(gw: GatewayContext, attempt: (exclude: Set<string>, n: number) => Promise<T>): Promise<T> {
  const exclude = new Set<string>();
  const state: RetryState = { attempts: 0, backoffSpentMs: 0 };
  for (;;) {
    state.attempts++;
    try {
      return await attempt(exclude, state.attempts);
    } catch (err) {
      if (!(err instanceof GatewayError) || gw.clientSignal.aborted) throw err;
      const wait = nextRetryDelay(err.status, false, state, gw.config.retry);
      if (wait === undefined) throw err;
      console.warn(JSON.stringify({ msg: "retrying request", attempt: state.attempts, status: err.status, code: err.code, waitMs: wait }));
      state.backoffSpentMs += wait;
      await delay(wait);
    }
  }
}
