// Test-side client of the sim control server and of each engine's /sim/* endpoints. Runs in
// workerd (integration tests), so it only uses fetch.
import { inject } from "vitest";
import type { ClusterSpec, EngineStats, RunningEngine, SimFault } from "../../sim/types.js";

export interface TestCluster {
  id: string;
  engines: Omit<RunningEngine, "spec">[] & { spec: RunningEngine["spec"] }[];
  url(name: string): string;
  engine(name: string): RunningEngine;
  stats(name: string): Promise<EngineStats>;
  reset(name?: string): Promise<void>;
  setFaults(name: string, faults: SimFault | SimFault[]): Promise<void>;
  /** Every engine of one cluster goes down at once (sim/cluster.ts killCluster). */
  killCluster(name: string): Promise<void>;
  setNetworkDelay(name: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTestCluster(spec: ClusterSpec): Promise<TestCluster> {
  const base = inject("simControlUrl");
  const res = await fetch(`${base}/clusters`, { method: "POST", body: JSON.stringify(spec), headers: { "content-type": "application/json" } });
  if (res.status !== 201) throw new Error(`sim cluster start failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { id: string; engines: RunningEngine[] };
  const engine = (name: string) => {
    const e = body.engines.find((x) => x.spec.name === name);
    if (!e) throw new Error(`no sim engine ${name}`);
    return e;
  };
  const control = async (op: string, payload: unknown) => {
    const r = await fetch(`${base}/clusters/${body.id}/${op}`, { method: "POST", body: JSON.stringify(payload), headers: { "content-type": "application/json" } });
    if (r.status !== 204) throw new Error(`sim ${op} failed: ${r.status} ${await r.text()}`);
  };
  const cluster: TestCluster = {
    id: body.id,
    engines: body.engines,
    url: (name) => engine(name).url,
    engine,
    async stats(name) {
      const r = await fetch(`${engine(name).url}/sim/stats`);
      return (await r.json()) as EngineStats;
    },
    async reset(name) {
      const names = name ? [name] : body.engines.map((e) => e.spec.name);
      await Promise.all(names.map(async (n) => (await fetch(`${engine(n).url}/sim/reset?hard=1`, { method: "POST" })).body?.cancel()));
    },
    async setFaults(name, faults) {
      const r = await fetch(`${engine(name).url}/sim/faults`, { method: "POST", body: JSON.stringify(faults) });
      if (!r.ok) throw new Error(`setFaults failed: ${r.status} ${await r.text()}`);
    },
    async killCluster(name) {
      await control("kill", { cluster: name });
    },
    async setNetworkDelay(name, ms) {
      await control("delay", { cluster: name, networkDelayMs: ms });
    },
    async close() {
      await (await fetch(`${base}/clusters/${body.id}`, { method: "DELETE" })).body?.cancel();
    },
  };
  return cluster;
}

/** Polls until `check` passes or the deadline: for effects that land asynchronously
 *  (Abort RPCs sent from waitUntil, lease expiry). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 5_000, stepMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, stepMs));
    }
  }
}
