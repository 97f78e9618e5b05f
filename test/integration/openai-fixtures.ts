// Shared fixtures for the OpenAI-surface integration tests: a NIXL prefill/decode pair of sim
// engines serving the vLLM OpenAI API, the gateway config that points at it over openai-http,
// an OpenAI SDK client wired to the Worker, and readers for what each engine received.
import OpenAI from "openai";
import type { EngineSpec, RecordedRequest } from "../../sim/types.js";
import type { TestCluster } from "../support/sim.js";
import type { TestGateway } from "../support/gateway.js";

export const FAST = { perPromptTokenMs: 0.01, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 };
export const MODEL = "m";
export const NIXL_TAG = { do_remote_decode: true, do_remote_prefill: false };

export function httpPairSpecs(prefill: Partial<EngineSpec> = {}, decode: Partial<EngineSpec> = {}): EngineSpec[] {
  return [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: MODEL, port: 0, latency: FAST, ...prefill },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: MODEL, port: 0, latency: FAST, ...decode },
  ];
}

export interface HttpPairConfigOptions {
  prefill?: Record<string, unknown>;
  decode?: Record<string, unknown>;
  deferredAbortMaxMs?: number;
  allowOverrides?: boolean;
  limits?: { max_body_bytes?: number; max_n?: number };
  /** Extra models next to MODEL. */
  models?: Record<string, unknown>;
  /** Retries are off by default here, so each error row shows exactly one attempt. */
  retries?: boolean;
  /** MODEL's SSE relay (the gateway's default, "native", when unset). */
  sseRelay?: "inspect" | "native";
}

export function httpPairConfig(cluster: TestCluster, o: HttpPairConfigOptions = {}) {
  return {
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: "openai-http", kv_connector: "NixlConnector", ...o.prefill }],
        decode: [{ name: "decode", url: cluster.url("decode"), transport: "openai-http", ...o.decode }],
        ...(o.sseRelay ? { sse_relay: o.sseRelay } : {}),
      },
      ...o.models,
    },
    limits: { max_body_bytes: o.limits?.max_body_bytes ?? 4 * 1024 * 1024, max_n: o.limits?.max_n ?? 16 },
    pd: { deferred_abort_max_ms: o.deferredAbortMaxMs ?? 25_000, engine_info_ttl_ms: 0 },
    debug: { allow_pd_overrides: o.allowOverrides ?? false },
    retry: { disabled: o.retries !== true, initial_backoff_ms: 1 },
  };
}

export function openai(gw: TestGateway, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({
    baseURL: "http://gateway.test/v1",
    apiKey: "x",
    fetch: gw.fetch as never,
    maxRetries: 0,
    defaultHeaders: headers,
  });
}

/** The OpenAI-API requests an engine received, oldest first. */
export async function openaiReceived(cluster: TestCluster, engine: string): Promise<RecordedRequest[]> {
  const stats = await cluster.stats(engine);
  return stats.recent.filter((r) => r.surface === "openai");
}

export async function expectNoPinnedBlocks(cluster: TestCluster): Promise<void> {
  for (const e of cluster.engines) {
    const s = await cluster.stats(e.spec.name);
    if (s.blocksPinned !== 0) throw new Error(`${e.spec.name} still pins ${s.blocksPinned} blocks`);
  }
}

/** POSTs raw JSON (or any body) to the Worker. */
export function post(gw: TestGateway, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return gw.fetch(`http://gateway.test${path}`, {
    method: "POST",
    ...init,
    headers: { "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** A streamed completion (200 tokens) whose client goes away after its second chunk. */
export async function leaveAfterTwoChunks(gw: TestGateway, model: string): Promise<void> {
  const controller = new AbortController();
  let chunks = 0;
  await (async () => {
    const s = await openai(gw).completions.create({ model, prompt: "long", max_tokens: 200, ignore_eos: true, stream: true } as never, { signal: controller.signal });
    for await (const _ of s as unknown as AsyncIterable<unknown>) if (++chunks === 2) controller.abort();
  })().catch(() => undefined);
}
