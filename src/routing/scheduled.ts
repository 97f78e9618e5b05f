// The Worker's cron trigger (every minute): hands the registry object the current config and
// asks it for a health run if one is due. The object's own alarm is the real schedule (it can
// go below a minute); the cron is the watchdog that starts it after a deploy and revives it
// should it ever lapse. A run the alarm made recently is not repeated (runIsDue).
import type { RegistryNamespace } from "./registry-client.js";
import { ConfigError, loadConfig, type GatewayConfigVar } from "../config/load.js";
import { registryStub } from "./registry-client.js";
import type { HealthRunReport } from "./registry-types.js";

export async function scheduledHealthChecks(env: { GATEWAY_CONFIG?: GatewayConfigVar; REGISTRY?: RegistryNamespace }): Promise<HealthRunReport | undefined> {
  if (!env.REGISTRY) return undefined;
  let config;
  try {
    config = loadConfig(env.GATEWAY_CONFIG);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(JSON.stringify({ msg: "invalid gateway config; health checks skipped", error: err.message }));
    return undefined;
  }
  if (config.health.disabled) return undefined;
  return registryStub(env.REGISTRY).runHealthChecks({ models: config.models, health: config.health, breaker: config.breaker }, { ifDue: true });
}
