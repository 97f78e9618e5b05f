// The Worker's bindings, as wrangler.toml declares them.
export interface Env {
  /** Gateway config as JSON text (see docs/configuration.md). */
  GATEWAY_CONFIG?: string;
  /** Workers Analytics Engine dataset for metrics. */
  METRICS?: AnalyticsEngineDataset;
}
