// What a request's kv_transfer_params dict asks this engine's connector to do. The dict is the
// same on both surfaces (gRPC JSON field or legacy typed field, OpenAI top-level
// kv_transfer_params), and, as in vLLM, only the engine's own connector interprets it.
import type { EngineConfig } from "./spec.js";

export type KvParams = Record<string, unknown>;

export interface PullTarget {
  connector: "nixl" | "mooncake";
  /** Side-channel base URL ("http://host:port"), or undefined when the params do not say. */
  baseUrl: string | undefined;
  /** Path prefix on that listener: "/sim/kv" (NIXL) or "/sim/mooncake". */
  path: "/sim/kv" | "/sim/mooncake";
  /** Body for /pull and /release: identifies the handoff on the producing engine. */
  body: Record<string, unknown>;
  /** Blocks the transfer moves, for pull latency. */
  blocks: number;
}

export type KvIntent =
  | { kind: "none" }
  /** NIXL producer: pin and return params iff the request finishes length-capped. */
  | { kind: "nixl-produce" }
  /** Mooncake producer: pin under `key` once the prompt is computed; return nothing. */
  | { kind: "mooncake-produce"; key: string }
  /** Consumer: pull the prompt's KV instead of computing it. */
  | { kind: "pull"; target: PullTarget };

export const nixlKey = (requestId: string) => `nixl:${requestId}`;
export const mooncakeTransferKey = (transferId: string) => `mooncake-xfer:${transferId}`;
export const mooncakeRequestKey = (requestId: string) => `mooncake-req:${requestId}`;

/** "prefill" when the request is a prefill-form leg (asks for a remote decode). */
export function legOf(params: KvParams | undefined): "prefill" | "decode" {
  return params && truthy(params.do_remote_decode) ? "prefill" : "decode";
}

function truthy(v: unknown): boolean {
  return v !== undefined && v !== null && v !== false && v !== 0 && v !== "";
}

/** The gateway sends "http://host:port"; tolerate a bare "host:port" as Mooncake itself does. */
function withScheme(addr: string): string {
  return /^https?:\/\//.test(addr) ? addr : `http://${addr}`;
}

function hostPortUrl(host: unknown, port: unknown): string | undefined {
  if (typeof host !== "string" || host === "") return undefined;
  const p = typeof port === "string" ? Number(port) : port;
  if (typeof p !== "number" || !Number.isInteger(p) || p < 1 || p > 65535) return undefined;
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${p}`;
}

export function classifyKv(
  cfg: EngineConfig,
  params: KvParams | undefined,
  requestId: string,
  promptTokens: number,
): KvIntent {
  if (cfg.kvConnector === "none") return { kind: "none" };
  if (!params && cfg.kvConnector === "NixlConnector" && cfg.kvHandoffByDefault) return { kind: "nixl-produce" };
  if (!params) {
    // A Mooncake kv_producer saves every request's KV under its request id (legacy mode, where
    // the gateway sends the prefill leg no params at all).
    const legacyProducer = cfg.kvConnector === "MooncakeConnector" && cfg.role === "prefill";
    return legacyProducer ? { kind: "mooncake-produce", key: mooncakeRequestKey(requestId) } : { kind: "none" };
  }
  const promptBlocks = Math.ceil(promptTokens / cfg.blockSize);
  if (cfg.kvConnector === "NixlConnector") {
    if (truthy(params.do_remote_prefill)) {
      const ids = params.remote_block_ids;
      return {
        kind: "pull",
        target: {
          connector: "nixl",
          baseUrl: hostPortUrl(params.remote_host, params.remote_port),
          path: "/sim/kv",
          body: {
            request_id: typeof params.remote_request_id === "string" ? params.remote_request_id : requestId,
            remote_engine_id: params.remote_engine_id,
            remote_block_ids: ids,
            requester: cfg.name,
            requester_cluster: cfg.cluster,
          },
          blocks: Array.isArray(ids) ? ids.length : promptBlocks,
        },
      };
    }
    if (truthy(params.do_remote_decode)) return { kind: "nixl-produce" };
    return { kind: "none" };
  }
  // MooncakeConnector.
  const transferId = typeof params.transfer_id === "string" && params.transfer_id !== "" ? params.transfer_id : undefined;
  if (truthy(params.do_remote_decode)) {
    if (transferId) return { kind: "mooncake-produce", key: mooncakeTransferKey(transferId) };
    return cfg.role === "prefill" ? { kind: "mooncake-produce", key: mooncakeRequestKey(requestId) } : { kind: "none" };
  }
  if (transferId && truthy(params.do_remote_prefill)) {
    const addr = typeof params.remote_bootstrap_addr === "string" && params.remote_bootstrap_addr !== ""
      ? withScheme(params.remote_bootstrap_addr.replace(/\/+$/, ""))
      : undefined;
    return {
      kind: "pull",
      target: {
        connector: "mooncake",
        baseUrl: addr,
        path: "/sim/mooncake",
        body: { transfer_id: transferId, remote_engine_id: params.remote_engine_id, requester: cfg.name, requester_cluster: cfg.cluster },
        blocks: promptBlocks,
      },
    };
  }
  if (params.remote_host !== undefined || params.remote_port !== undefined) {
    // Legacy typed host/port: the decode pulls by its own request id from the bootstrap server.
    return {
      kind: "pull",
      target: {
        connector: "mooncake",
        baseUrl: hostPortUrl(params.remote_host, params.remote_port),
        path: "/sim/mooncake",
        body: { request_id: requestId, requester: cfg.name, requester_cluster: cfg.cluster },
        blocks: promptBlocks,
      },
    };
  }
  return cfg.role === "prefill" ? { kind: "mooncake-produce", key: mooncakeRequestKey(requestId) } : { kind: "none" };
}

/** Key of the handoff a side-channel pull/release body names, on the producing engine. */
export function handoffKeyFromBody(path: "/sim/kv" | "/sim/mooncake", body: Record<string, unknown>): string | undefined {
  if (path === "/sim/kv") return typeof body.request_id === "string" ? nixlKey(body.request_id) : undefined;
  if (typeof body.transfer_id === "string") return mooncakeTransferKey(body.transfer_id);
  if (typeof body.request_id === "string") return mooncakeRequestKey(body.request_id);
  return undefined;
}
