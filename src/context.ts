// Per-request gateway context, built in one place (app.ts) and handed to every surface.
import { createContextKey } from "@connectrpc/connect";
import type { LoadedConfig } from "./config/load.js";
import type { EventSink } from "./metrics/events.js";

export interface GatewayContext {
  config: LoadedConfig;
  events: EventSink;
  waitUntil(promise: Promise<unknown>): void;
  /** Fires when the client goes away (request.signal with enable_request_signal). */
  clientSignal: AbortSignal;
}

export const gatewayContextKey = createContextKey<GatewayContext | undefined>(undefined, {
  description: "vllm-edge-gateway request context",
});
