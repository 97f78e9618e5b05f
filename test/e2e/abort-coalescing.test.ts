// Abort calls coalesced per engine, in a real workerd where each call is its own request
// context (the vitest harness runs every request in one): calls that wait for another call's
// RPC must neither be killed as hung nor lose their ids, and nothing stays held afterwards.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { workerdUrl } from "../support/workerd-socket.js";

let cluster: RunningCluster;
let gateway: WranglerDev;
let base: string;

beforeAll(async () => {
  cluster = await startCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p", model: "m", port: 0 },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "d", model: "m", port: 0 },
    ],
  });
  gateway = await startWranglerDev({
    auth: { data_plane: "open" },
    limits: { max_concurrent_aborts_per_key: 8 },
    models: { m: { prefill: [{ name: "prefill", url: cluster.engine("prefill").url }], decode: [{ name: "decode", url: cluster.engine("decode").url }] } },
  });
  base = gateway.workerd().worker === undefined ? gateway.url : await workerdUrl(gateway);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

async function setFaults(engine: string, faults: unknown) {
  await (await fetch(`${cluster.engine(engine).url}/sim/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(faults) })).arrayBuffer();
}

async function stats(engine: string) {
  return (await (await fetch(`${cluster.engine(engine).url}/sim/stats`)).json()) as { abortsReceived: number; abortedRequestIds: string[] };
}

const abort = (ids: string[]) =>
  fetch(`${base}/vllm.grpc.engine.VllmEngine/Abort`, { method: "POST", headers: { "content-type": "application/json", "x-model": "m" }, body: JSON.stringify({ request_ids: ids }) });

it("concurrent Abort calls in separate requests: every call answers 200, every id reaches each engine, in fewer RPCs", async () => {
  await setFaults("decode", { slowAbortMs: 500 });
  await setFaults("prefill", { slowAbortMs: 500 });
  const first = abort(["c0"]);
  await new Promise((r) => setTimeout(r, 100)); // its RPCs are in flight
  const rest = await Promise.all(["c1", "c2", "c3", "c4"].map((id) => abort([id])));
  const all = [await first, ...rest];
  expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
  for (const r of all) expect(await r.json()).toEqual({});
  for (const engine of ["decode", "prefill"]) {
    const s = await stats(engine);
    expect([...s.abortedRequestIds].sort()).toEqual(["c0", "c1", "c2", "c3", "c4"]);
    expect(s.abortsReceived).toBe(2); // the first alone, the four that waited together
  }
  // Nothing held: another round goes out at once.
  const again = await abort(["c5"]);
  expect(again.status).toBe(200);
  expect((await stats("decode")).abortedRequestIds).toContain("c5");
}, 60_000);
