// Each model's context length (GetModelInfo.max_context_length), learned in the background
// per isolate, so a request that cannot fit is refused before any engine work once it is
// known. The hot path never waits for it: until the first answer the engine checks alone.
import type { VllmEngineClient } from "./vllm-engine.js";

const TTL_MS = 10 * 60_000;
const RETRY_AFTER_FAILURE_MS = 30_000;
const TIMEOUT_MS = 5_000;

interface Entry {
  at: number;
  ttl: number;
  value?: number;
  loading: boolean;
}

export class ModelContexts {
  private readonly byModel = new Map<string, Entry>();

  /** The model's context length if known; when unknown or stale, asks `client` in the background. */
  known(model: string, client: () => VllmEngineClient | undefined, waitUntil: (p: Promise<unknown>) => void, now: number = Date.now()): number | undefined {
    const entry = this.byModel.get(model) ?? { at: 0, ttl: 0, loading: false };
    if (!entry.loading && now - entry.at >= entry.ttl) {
      const c = client();
      if (c) {
        entry.loading = true;
        this.byModel.set(model, entry);
        waitUntil(
          c
            .getModelInfo({}, { timeoutMs: TIMEOUT_MS })
            .then((info) => {
              entry.value = info.maxContextLength > 0 ? info.maxContextLength : undefined;
              entry.ttl = TTL_MS;
            })
            .catch(() => {
              entry.ttl = RETRY_AFTER_FAILURE_MS;
            })
            .finally(() => {
              entry.at = Date.now();
              entry.loading = false;
            }),
        );
      }
    }
    return entry.value;
  }
}
