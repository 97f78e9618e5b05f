// Per-request gateway context, built in one place (app.ts) and handed to every surface.
import type { ContextKey } from "@connectrpc/connect";
import type { LoadedConfig } from "./config/load.js";
import type { ResponseStoreClient } from "./conversations/response-store-client.js";
import type { EventSink } from "./metrics/events.js";
import type { IsolateState } from "./routing/isolate.js";
import type { PipelineContext } from "./routing/pipeline.js";
import type { RoutingSnapshot } from "./routing/snapshot.js";

export interface GatewayContext {
  /** When the request reached the gateway (epoch ms), before any middleware: where TTFT and
   *  every request duration start (api/request-metrics.ts). */
  arrivedAt: number;
  config: LoadedConfig;
  /** Engines to route to (config merged with the registry) and their shared health/breakers. */
  routing: RoutingSnapshot;
  /** What this isolate remembers between requests. */
  isolate: IsolateState;
  events: EventSink;
  waitUntil(promise: Promise<unknown>): void;
  /** Fires when the client goes away (request.signal with enable_request_signal). */
  clientSignal: AbortSignal;
  /** Who sent the request: the data-plane credential's tag, or "open". Scopes Abort. */
  owner: string;
  /** The Responses API's store (the RESPONSES binding); undefined: responses are not stored. */
  responseStore: ResponseStoreClient | undefined;
  /** The generation pipeline's context for a request to `model`. */
  pipeline(model: string): PipelineContext;
}

// What Connect's createContextKey builds, without importing Connect's index here (that would
// load Connect and protobuf's runtime at the isolate's start-up).
export const gatewayContextKey: ContextKey<GatewayContext | undefined> = {
  id: Symbol("vllm-edge-gateway request context"),
  defaultValue: undefined,
};

/** The config with its models replaced by the routed view (config + registry engines). */
export function routedConfig(gw: GatewayContext): LoadedConfig {
  return gw.routing.models === gw.config.models ? gw.config : { ...gw.config, models: gw.routing.models };
}
