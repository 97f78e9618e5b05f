// The client's Abort call in a real workerd, where it is a request of its own (the vitest
// harness runs every request in one context): it must reach the legs of the Generate it names,
// which run in another request, by the handoff rule, without touching that request's objects.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { workerdUrl } from "../support/workerd-socket.js";
import { envelope } from "../support/engine-wire.js";

/** A Connect JSON message, framed. */
const jsonMessage = (message: unknown) => envelope(0, new TextEncoder().encode(JSON.stringify(message)));

let cluster: RunningCluster;
let gateway: WranglerDev;
let base: string;
/** The deferred decode abort's cap: above the ~300 ms pull, and short enough to wait for. */
const CAP_MS = 1_500;

interface EngineStats {
  abortedRequestIds: string[];
  abortsReceived: number;
  abortsDuringPull: number;
  generateRequests: number;
  blocksPinned: number;
  kvPullsServed: number;
}

beforeAll(async () => {
  // Decode's KV pull takes ~300 ms per block, so the Abort call lands while decode pulls.
  const latency = { perPromptTokenMs: 0.01, perOutputTokenMs: 50, perBlockPullMs: 300, pullSetupMs: 0 };
  cluster = await startCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p", model: "m", port: 0, latency },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "d", model: "m", port: 0, latency },
    ],
  });
  gateway = await startWranglerDev({
    auth: { data_plane: "open" },
    models: { m: { prefill: [{ name: "prefill", url: cluster.engine("prefill").url }], decode: [{ name: "decode", url: cluster.engine("decode").url }] } },
    pd: { engine_info_ttl_ms: 0, deferred_abort_max_ms: CAP_MS },
  });
  base = gateway.workerd().worker === undefined ? gateway.url : await workerdUrl(gateway);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

const stats = async (engine: string) => (await (await fetch(`${cluster.engine(engine).url}/sim/stats`)).json()) as EngineStats;
const setFaults = async (engine: string, faults: unknown) =>
  (await fetch(`${cluster.engine(engine).url}/sim/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(faults) })).arrayBuffer();

/** A streamed Connect JSON Generate: its messages and its end-of-stream message. */
async function generate(requestId: string): Promise<{ messages: Record<string, unknown>[]; end: { error?: { code: string } } }> {
  const res = await fetch(`${base}/vllm.grpc.engine.VllmEngine/Generate`, {
    method: "POST",
    headers: { "content-type": "application/connect+json", "x-model": "m" },
    body: jsonMessage({ request_id: requestId, text: "an abort call from another request", stream: true, sampling_params: { max_tokens: 50, ignore_eos: true } }),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const messages: Record<string, unknown>[] = [];
  let end = {};
  for (let at = 0; at + 5 <= bytes.length; ) {
    const size = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    const json = JSON.parse(new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + size))) as Record<string, unknown>;
    if (bytes[at]! & 0x02) end = json;
    else messages.push(json);
    at += 5 + size;
  }
  return { messages, end };
}

async function until(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
}

const abortCall = (id: string) =>
  fetch(`${base}/vllm.grpc.engine.VllmEngine/Abort`, { method: "POST", headers: { "content-type": "application/json", "x-model": "m" }, body: JSON.stringify({ request_ids: [id] }) });

it("an Abort call while decode pulls the handoff: decode's Abort after its first frame, the stream ends with finish_reason abort, nothing pinned", async () => {
  const decodeBefore = await stats("decode");
  const done = generate("e2e-ab-pull");
  await until(async () => (await stats("decode")).generateRequests > decodeBefore.generateRequests);
  const res = await abortCall("e2e-ab-pull");
  expect([res.status, await res.json()]).toEqual([200, {}]);
  const out = await done;
  expect(out.end).toEqual({});
  const completes = out.messages.filter((m) => "complete" in m).map((m) => (m.complete as { finishReason: string }).finishReason);
  expect(completes).toEqual(["abort"]);
  await until(async () => (await stats("decode")).abortedRequestIds.includes("e2e-ab-pull"));
  const decode = await stats("decode");
  expect(decode.abortsDuringPull).toBe(decodeBefore.abortsDuringPull);
  expect((await stats("prefill")).abortedRequestIds).not.toContain("e2e-ab-pull");
  await until(async () => (await stats("prefill")).blocksPinned === 0 && (await stats("decode")).blocksPinned === 0);
}, 60_000);

it("an Abort call during the prefill drain: prefill aborted at once, decode never called, the Generate ends canceled request_aborted", async () => {
  await setFaults("prefill", { hang: true });
  try {
    const decodeBefore = (await stats("decode")).generateRequests;
    const prefillBefore = (await stats("prefill")).generateRequests;
    const done = generate("e2e-ab-drain");
    await until(async () => (await stats("prefill")).generateRequests > prefillBefore);
    const asked = Date.now();
    expect((await abortCall("e2e-ab-drain")).status).toBe(200);
    await until(async () => (await stats("prefill")).abortedRequestIds.includes("e2e-ab-drain"), 2_000);
    expect(Date.now() - asked).toBeLessThan(2_000);
    const out = await done;
    expect(out.end).toMatchObject({ error: { code: "canceled" } });
    expect((await stats("decode")).generateRequests).toBe(decodeBefore);
  } finally {
    await setFaults("prefill", {});
  }
}, 60_000);

it("an Abort call while decode never answers: decode's Abort goes out at the cap, after the Abort call has answered", async () => {
  await setFaults("decode", { hang: true });
  try {
    const decodeBefore = (await stats("decode")).generateRequests;
    const done = generate("e2e-ab-cap");
    await until(async () => (await stats("decode")).generateRequests > decodeBefore);
    const asked = Date.now();
    expect((await abortCall("e2e-ab-cap")).status).toBe(200);
    await until(async () => (await stats("decode")).abortedRequestIds.includes("e2e-ab-cap"), CAP_MS + 3_000);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(CAP_MS - 100);
    const out = await done;
    expect(out.messages.filter((m) => "complete" in m).map((m) => (m.complete as { finishReason: string }).finishReason)).toEqual(["abort"]);
    await until(async () => (await stats("prefill")).blocksPinned === 0);
  } finally {
    await setFaults("decode", {});
  }
}, 60_000);
