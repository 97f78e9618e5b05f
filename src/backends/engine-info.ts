// Engine KV metadata: GetServerInfo discovered once per isolate (TTL from config), with the
// config's overrides winning. A failed discovery falls back to the config alone and is retried
// soon, so one unreachable engine does not pin a wrong mode for the whole TTL.
import type { EngineConfig } from "../config/schema.js";
import { bootstrapHostOf, type EngineKvMeta } from "../core/kv-meta.js";
import type { VllmEngineClient } from "./vllm-engine.js";

interface Discovered {
  kvConnector: string;
  kvEngineId: string;
  dpSize: number;
}

const RETRY_AFTER_FAILURE_MS = 5_000;
const DISCOVERY_TIMEOUT_MS = 5_000;

/** Discovered metadata per engine URL and transport, for this isolate. */
export class EngineInfoCache {
  private readonly cache = new Map<string, { at: number; ttl: number; value: Promise<Discovered | undefined> }>();

  async kvMeta(engine: EngineConfig, client: VllmEngineClient, ttlMs: number, now: number = Date.now()): Promise<EngineKvMeta> {
    const needsDiscovery =
      engine.kv_connector === undefined || engine.kv_engine_id === undefined || engine.dp_size === undefined;
    const discovered = needsDiscovery ? await this.discover(engine, client, ttlMs, now) : undefined;
    return mergeKvMeta(engine, discovered);
  }

  private discover(engine: EngineConfig, client: VllmEngineClient, ttlMs: number, now: number) {
    const key = `${engine.transport} ${engine.url}`;
    const hit = this.cache.get(key);
    if (hit && now - hit.at < hit.ttl) return hit.value;
    const entry = { at: now, ttl: ttlMs, value: Promise.resolve<Discovered | undefined>(undefined) };
    entry.value = client
      .getServerInfo({}, { timeoutMs: DISCOVERY_TIMEOUT_MS })
      .then((info) => ({ kvConnector: info.kvConnector, kvEngineId: info.kvEngineId, dpSize: info.dataParallelSize }))
      .catch((err: unknown) => {
        entry.ttl = RETRY_AFTER_FAILURE_MS;
        console.warn(JSON.stringify({ msg: "engine discovery failed", engine: engine.name, error: String(err) }));
        return undefined;
      });
    this.cache.set(key, entry);
    return entry.value;
  }
}

/** Config overrides win over discovered values. Pure. */
export function mergeKvMeta(engine: EngineConfig, discovered: Discovered | undefined): EngineKvMeta {
  const meta: EngineKvMeta = { bootstrapHost: bootstrapHostOf(engine.url) };
  const kvConnector = engine.kv_connector ?? discovered?.kvConnector;
  if (kvConnector) meta.kvConnector = kvConnector;
  const kvEngineId = engine.kv_engine_id ?? discovered?.kvEngineId;
  if (kvEngineId) meta.kvEngineId = kvEngineId;
  const dpSize = engine.dp_size ?? discovered?.dpSize;
  if (dpSize !== undefined && dpSize > 0) meta.dpSize = dpSize;
  if (engine.dp_rank !== undefined) meta.dpRank = engine.dp_rank;
  if (engine.bootstrap_port !== undefined) meta.bootstrapPort = engine.bootstrap_port;
  return meta;
}
