// HealthCheck for the gateway itself: healthy when every PD pool (and every regular pool)
// of each model has at least one engine answering HealthCheck healthy.
import type { GatewayContext } from "../../context.js";
import type { EngineConfig } from "../../config/schema.js";

const PROBE_TIMEOUT_MS = 2_000;

async function probe(gw: GatewayContext, engine: EngineConfig): Promise<boolean> {
  try {
    const res = await gw.isolate.engines.vllmEngine(engine).healthCheck({}, { timeoutMs: PROBE_TIMEOUT_MS });
    return res.healthy;
  } catch {
    return false;
  }
}

export async function checkEngineHealth(gw: GatewayContext, transports: ReadonlySet<string>) {
  const problems: string[] = [];
  await Promise.all(
    Object.entries(gw.routing.models).map(async ([model, pools]) => {
      for (const role of ["prefill", "decode", "regular"] as const) {
        const pool = pools[role].filter((e) => transports.has(e.transport));
        if (pool.length === 0) continue;
        const healthy = await Promise.all(pool.map((e) => probe(gw, e)));
        if (!healthy.some(Boolean)) problems.push(`${model}: no healthy ${role} engine`);
      }
    }),
  );
  return problems.length === 0
    ? { healthy: true, message: "Health" }
    : { healthy: false, message: problems.sort().join("; ") };
}
