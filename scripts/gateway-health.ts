// One probe of the gateway's /health, as `npm start` reads it: up (2xx), a config the gateway
// rejected (503 {"status":"config_invalid","errors":[...]}, listed), or not answering yet.

export type HealthAnswer = { up: true } | { up: false; configErrors: string[] } | undefined;

export async function probeHealth(url: string): Promise<HealthAnswer> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    const body = await res.text();
    if (res.ok) return { up: true };
    if (res.status === 503) {
      try {
        const json = JSON.parse(body) as { status?: string; errors?: unknown[] };
        if (json.status === "config_invalid") return { up: false, configErrors: (json.errors ?? []).map((e) => (typeof e === "string" ? e : JSON.stringify(e))) };
      } catch {
        // not the config report: keep waiting
      }
    }
  } catch {
    // not listening yet
  }
  return undefined;
}
