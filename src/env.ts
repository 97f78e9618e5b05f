// The Worker's bindings, as wrangler.toml declares them.
import type { RegistryNamespace } from "./routing/registry-client.js";

export interface Env {
  /** Gateway config (docs/configuration.md): JSON text, or an object when wrangler.toml
   *  writes it as a TOML table. */
  GATEWAY_CONFIG?: string | object;
  /** Workers Analytics Engine dataset for metrics. */
  METRICS?: AnalyticsEngineDataset;
  /** Data-plane API keys, comma-separated (a wrangler secret). */
  API_KEYS?: string;
  /** Workers Rate Limiting binding; per-key limits when bound. */
  RATE_LIMITER?: RateLimit;
  /** The engine registry Durable Object (routing/registry-do.ts). Without it the gateway
   *  routes from the config alone and the admin API cannot register engines. */
  REGISTRY?: RegistryNamespace;
  /** Secret (`wrangler secret put ADMIN_TOKEN`): bearer token of the admin API, which is off
   *  (404) while it is unset. */
  ADMIN_TOKEN?: string;
  /** "on" serves GET /admin/metrics/recent (a per-isolate ring of data points); dev only. */
  DEV_METRICS?: string;
}
