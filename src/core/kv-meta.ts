// What the gateway knows about an engine's KV setup: discovered (GetServerInfo) with the
// config's overrides applied. Shared by the transports that discover it and the PD plan.

export interface EngineKvMeta {
  /** "NixlConnector", "MooncakeConnector", anything else (or absent) = passthrough. */
  kvConnector?: string;
  /** Base kv_transfer_config.engine_id; "" = none. */
  kvEngineId?: string;
  /** data_parallel_size; unset = 1. */
  dpSize?: number;
  /** Pinned DP rank of this engine entry, if DP-aware. */
  dpRank?: number;
  /** Host part of the engine URL (Mooncake bootstrap host). */
  bootstrapHost: string;
  /** Mooncake bootstrap port (default 8998). */
  bootstrapPort?: number;
}

/** Host of an engine URL for bootstrap addressing: brackets dropped, DP suffix "@N" stripped. */
export function bootstrapHostOf(url: string): string {
  const host = new URL(url).hostname.replace(/@\d+$/, "");
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
