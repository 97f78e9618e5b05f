// KV connector mode, derived from the prefill engine's metadata (pd-reference 2.1), and the
// exact KV-params JSON each mode puts on the wire. Pure: no I/O, no clock.
import type { EngineKvMeta } from "../core/kv-meta.js";
import type { ConnectorModeName as ModeName } from "../core/types.js";

export type { EngineKvMeta } from "../core/kv-meta.js";
export { bootstrapHostOf } from "../core/kv-meta.js";

export type ConnectorMode =
  | { kind: "nixl" }
  | { kind: "passthrough" }
  | { kind: "mooncake"; host: string; port: number; engineId?: string };

export type ConnectorModeName = ModeName;

export const DEFAULT_MOONCAKE_BOOTSTRAP_PORT = 8998;

export function connectorMode(prefill: EngineKvMeta | undefined): ConnectorMode {
  if (!prefill) return { kind: "passthrough" };
  if (prefill.kvConnector === "MooncakeConnector") {
    const engineId = effectiveEngineId(prefill);
    return {
      kind: "mooncake",
      host: prefill.bootstrapHost,
      port: prefill.bootstrapPort ?? DEFAULT_MOONCAKE_BOOTSTRAP_PORT,
      ...(engineId !== undefined ? { engineId } : {}),
    };
  }
  if (prefill.kvConnector === "NixlConnector") return { kind: "nixl" };
  return { kind: "passthrough" };
}

/** Base engine id, suffixed "_dp{rank}" when DP > 1 and the engine is pinned; an unpinned
 *  DP > 1 engine has no id the gateway can mint for (its cores serve "{id}_dp{rank}"). */
export function effectiveEngineId(meta: Pick<EngineKvMeta, "kvEngineId" | "dpSize" | "dpRank">): string | undefined {
  const base = meta.kvEngineId ? meta.kvEngineId : undefined;
  if (base === undefined) return undefined;
  const dp = meta.dpSize ?? 1;
  if (dp > 1) return meta.dpRank !== undefined ? `${base}_dp${meta.dpRank}` : undefined;
  return base;
}

/** Mooncake "modern": an engine id is known and the handoff is relayed (n <= 1). */
export function isMooncakeModern(mode: ConnectorMode, relay: boolean): boolean {
  return mode.kind === "mooncake" && mode.engineId !== undefined && relay;
}

/** Exactly two keys: asks the prefill engine to keep the KV for a remote decode. */
export const NIXL_PREFILL_PARAMS_JSON = '{"do_remote_decode":true,"do_remote_prefill":false}';

export function mooncakePrefillParamsJson(transferId: string): string {
  return JSON.stringify({ do_remote_decode: true, do_remote_prefill: false, transfer_id: transferId });
}

export function mooncakeDecodeParamsJson(transferId: string, engineId: string, host: string, port: number): string {
  return JSON.stringify({
    do_remote_decode: false,
    do_remote_prefill: true,
    transfer_id: transferId,
    remote_engine_id: engineId,
    remote_bootstrap_addr: `http://${formatHost(host)}:${port}`,
  });
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
