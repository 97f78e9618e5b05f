// Each model's context length, learned in the background per isolate, so a request that
// cannot fit is refused before any engine work once it is known: GetModelInfo's
// max_context_length from a VllmEngine engine, or max_model_len from an OpenAI HTTP engine's
// GET /v1/models (vLLM reports it there). The hot path never waits for it: until the first
// answer the engine checks alone.
import type { EngineTarget } from "../core/types.js";
import { engineRouteUrl } from "./openai-http.js";
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

/** Asks one engine for the model's context length (undefined: it did not say). */
export type ContextSource = () => Promise<number | undefined>;

export class ModelContexts {
  private readonly byModel = new Map<string, Entry>();

  /** The model's context length if known; when unknown or stale, asks `source` in the background. */
  known(model: string, source: () => ContextSource | undefined, waitUntil: (p: Promise<unknown>) => void, now: number = Date.now()): number | undefined {
    const entry = this.byModel.get(model) ?? { at: 0, ttl: 0, loading: false };
    if (!entry.loading && now - entry.at >= entry.ttl) {
      const ask = source();
      if (ask) {
        entry.loading = true;
        this.byModel.set(model, entry);
        waitUntil(
          ask()
            .then((value) => {
              entry.value = value;
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

/** GetModelInfo.max_context_length of a VllmEngine engine. */
export function vllmEngineContext(client: VllmEngineClient): ContextSource {
  return async () => {
    const info = await client.getModelInfo({}, { timeoutMs: TIMEOUT_MS });
    return info.maxContextLength > 0 ? info.maxContextLength : undefined;
  };
}

/** max_model_len of `model` in an OpenAI HTTP engine's GET /v1/models (asked with `engineFetch`). */
export function openAiHttpContext(engine: EngineTarget, model: string, engineFetch: typeof fetch): ContextSource {
  return async () => {
    const res = await engineFetch(engineRouteUrl(engine.url, "/v1/models"), { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`GET /v1/models: HTTP ${res.status}`);
    }
    const data = ((await res.json()) as { data?: unknown }).data;
    const entry = Array.isArray(data) ? (data as { id?: unknown; max_model_len?: unknown }[]).find((m) => m?.id === model) : undefined;
    const len = entry?.max_model_len;
    return typeof len === "number" && Number.isInteger(len) && len > 0 ? len : undefined;
  };
}
