// One active health probe (pd-reference 7.3): VllmEngine engines get the HealthCheck RPC and
// are healthy iff it says so; openai-http engines get GET {url}{health.endpoint} and are
// healthy iff it answers 2xx. A probe never throws: failures come back with a reason, which
// ends up in the engine's lastError for operators.
import { Code } from "../core/grpc-code.js";
import { isConnectError } from "../core/errors.js";
import type { EngineConnections } from "../backends/engine-clients.js";
import { healthProbeUrl } from "./engine-url.js";
import type { ProbeResult } from "./health-run.js";
import type { HealthConfig, ProbeTarget } from "./registry-types.js";

export async function probeEngine(target: ProbeTarget, health: Pick<HealthConfig, "timeout_secs" | "endpoint">, engines: EngineConnections): Promise<ProbeResult> {
  const timeoutMs = health.timeout_secs * 1000;
  const result = (ok: boolean, error?: string): ProbeResult =>
    error === undefined ? { name: target.name, url: target.url, ok } : { name: target.name, url: target.url, ok, error };
  if (target.transport === "openai-http") {
    const url = healthProbeUrl(target.url, health.endpoint);
    try {
      const res = await engines.fetchFor(target)(url, { signal: AbortSignal.timeout(timeoutMs) });
      await res.body?.cancel();
      return res.ok ? result(true) : result(false, `GET ${health.endpoint} answered ${res.status}`);
    } catch (err) {
      return result(false, isTimeout(err) ? `GET ${health.endpoint} did not answer within ${health.timeout_secs} s` : `GET ${health.endpoint} failed: ${text(err)}`);
    }
  }
  try {
    const res = await engines.vllmEngine(target).healthCheck({}, { timeoutMs });
    return res.healthy ? result(true) : result(false, `HealthCheck: not healthy${res.message ? ` (${res.message})` : ""}`);
  } catch (err) {
    if (isConnectError(err) && err.code === Code.DeadlineExceeded) {
      return result(false, `HealthCheck did not answer within ${health.timeout_secs} s`);
    }
    return result(false, `HealthCheck failed: ${text(err)}`);
  }
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
}

/** ConnectError messages already carry the code ("[unavailable] fetch failed"). */
function text(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
