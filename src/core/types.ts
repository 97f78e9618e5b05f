// Names shared by every layer: which surface a request came in on, which leg an engine
// serves, how decode got its KV handoff. Types only.

export type Surface = "engine" | "openai" | "anthropic";

/** The role an engine plays for one request: a PD leg, or the one engine of aggregated mode. */
export type Leg = "prefill" | "decode" | "regular";

/** How decode got its KV handoff (pd-reference 2.7 rows A-E). */
export type KvInjection = "minted" | "legacy" | "relayed" | "none";

/** KV connector mode of the prefill engine (pd-reference 2.1). */
export type ConnectorModeName = "nixl" | "passthrough" | "mooncake";

/** Why a PD request's prefill leg was skipped. */
export type SkipReason = "fanout" | "short_prompt" | "prefill_busy";

export type BreakerState = "closed" | "open" | "half_open";

/** The engine an outcome, a load charge or an error is about. */
export interface EngineTarget {
  /** Configured name: what clients, logs and metrics see. */
  name: string;
  /** Base URL (logs only; never in a client-visible message). */
  url: string;
  transport: string;
  /** The Worker binding (a Workers VPC service) its requests go through, if any. */
  binding?: string;
  /** The engine's cluster (metrics); absent = "default". */
  cluster?: string;
}
