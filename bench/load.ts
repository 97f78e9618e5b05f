// Bounded load: sequential latency with the targets interleaved request by request, a fixed
// batch of requests at a given concurrency, and autocannon for throughput. Every loop has a
// count and a deadline.
import autocannon from "autocannon";
import { agentFor, post, type Exchange, type Target } from "./http.js";
import { rotated } from "./stats.js";

export interface RequestSpec {
  path: string;
  body: string;
  headers?: Record<string, string>;
  sse?: boolean;
}

function headersFor(t: Target, spec: RequestSpec): Record<string, string> {
  return { ...t.headers, ...spec.headers };
}

function checkOk(t: Target, ex: Exchange): Exchange {
  if (ex.status !== 200) throw new Error(`${t.name}: HTTP ${ex.status}${ex.body ? `: ${ex.body.slice(0, 300)}` : ""}`);
  return ex;
}

/** One request to a target (keep-alive, one socket per target at concurrency 1). */
export async function once(t: Target, spec: RequestSpec, sockets = 1, keepBody = false): Promise<Exchange> {
  const ex = await post(`${t.base}${spec.path}`, spec.body, {
    agent: agentFor(t.name, sockets),
    headers: headersFor(t, spec),
    sse: spec.sse ?? false,
    keepBody,
  });
  if (ex.status !== 200 && !keepBody) {
    const again = await post(`${t.base}${spec.path}`, spec.body, { agent: agentFor(t.name, sockets), headers: headersFor(t, spec), keepBody: true });
    return checkOk(t, again);
  }
  return checkOk(t, ex);
}

/**
 * Concurrency 1, the targets interleaved request by request (round i starts at target i mod k),
 * so a slow moment of the machine lands on every target alike. Returns each target's exchanges.
 */
export async function interleaved(
  targets: readonly Target[],
  spec: RequestSpec | ((t: Target) => RequestSpec),
  rounds: number,
  deadlineMs: number,
): Promise<Map<string, Exchange[]>> {
  const out = new Map<string, Exchange[]>(targets.map((t) => [t.name, []]));
  const stopAt = performance.now() + deadlineMs;
  for (let i = 0; i < rounds && performance.now() < stopAt; i++) {
    for (const t of rotated(targets, i)) {
      const s = typeof spec === "function" ? spec(t) : spec;
      out.get(t.name)!.push(await once(t, s));
    }
  }
  return out;
}

/** Runs `count` calls of `fn` with at most `concurrency` in flight; stops launching at the deadline. */
export async function batch<T>(count: number, concurrency: number, deadlineMs: number, fn: (i: number) => Promise<T>): Promise<{ results: T[]; errors: unknown[]; wallMs: number }> {
  const results: T[] = [];
  const errors: unknown[] = [];
  const t0 = performance.now();
  const stopAt = t0 + deadlineMs;
  let next = 0;
  const lane = async () => {
    while (next < count && performance.now() < stopAt) {
      const i = next++;
      try {
        results.push(await fn(i));
      } catch (err) {
        errors.push(err);
        if (errors.length > Math.max(10, count / 10)) throw new Error(`too many errors (${errors.length}); first: ${String(errors[0])}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, lane));
  return { results, errors, wallMs: performance.now() - t0 };
}

export interface Throughput {
  target: string;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  ok: number;
  non2xx: number;
  errors: number;
  durationS: number;
}

/** autocannon against one target for `seconds` (bounded by time), `connections` at once. */
export async function throughput(t: Target, spec: RequestSpec, connections: number, seconds: number): Promise<Throughput> {
  const result = await autocannon({
    url: `${t.base}${spec.path}`,
    method: "POST",
    body: spec.body,
    headers: { "content-type": "application/json", ...headersFor(t, spec) },
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
  });
  const ok = result["2xx"];
  return {
    target: t.name,
    // Completed 2xx responses over the run's own measured duration.
    requestsPerSec: ok / (result.duration || seconds),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    ok,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    durationS: result.duration,
  };
}
