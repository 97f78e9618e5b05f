// An engine's SSE event past bounds.max_sse_event_bytes, against a real workerd on its own
// socket (the pool reads the Worker's body in JavaScript; here workerd pumps it to a TCP
// client, so a write cut short inside the pipe would show as a broken connection). Both relays
// end the stream with the gateway's `engine_event_too_large` event naming the engine, and the
// engine's stream is cancelled. The native relay (the default) fails the leg at the cap, which
// aborts the engine's fetch: its pipe ends between writes, so the client's body stays whole.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { workerdUrl } from "../support/workerd-socket.js";

const MiB = 1024 * 1024;
let cluster: RunningCluster;
let gateway: WranglerDev;
let base: string;
const FAST = { perPromptTokenMs: 0.001, perOutputTokenMs: 1, perBlockPullMs: 0.01, pullSetupMs: 0 };

beforeAll(async () => {
  cluster = await startCluster({
    engines: ["m-inspect", "m-native"].map((model) => ({ name: model, role: "both" as const, kvConnector: "none" as const, model, port: 0, latency: FAST })),
  });
  const regular = (name: string) => ({ regular: [{ name, url: cluster.engine(name).url, transport: "openai-http" }] });
  gateway = await startWranglerDev({
    auth: { data_plane: "open" },
    retry: { disabled: true },
    bounds: { max_sse_event_bytes: MiB },
    models: { "m-inspect": { ...regular("m-inspect"), sse_relay: "inspect" }, "m-native": regular("m-native") },
  });
  base = await workerdUrl(gateway);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

async function engineState(name: string) {
  return (await (await fetch(`${cluster.engine(name).url}/sim/stats`)).json()) as { activeRequests: number };
}

const errorEvent = (engine: string) =>
  `data: {"error":{"message":"Engine sent an SSE event larger than 1048576 bytes (bounds.max_sse_event_bytes) (engine '${engine}')","type":"server_error","param":null,"code":"engine_event_too_large"}}\n\n`;

// 32 MiB is bench:faults scenario 7b's event; 3 MiB passes the cap within a few chunks.
it.each([["m-native", 3], ["m-native", 32], ["m-inspect", 32]] as const)("model %s, an unterminated %i MiB event: the client's body ends with the gateway's event, the engine's stream closed", async (model, mib) => {
  const fault = await fetch(`${cluster.engine(model).url}/sim/faults`, { method: "POST", body: JSON.stringify({ bigEvent: { bytes: mib * MiB, unterminated: true } }) });
  expect(fault.ok).toBe(true);
  const res = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "hi", max_tokens: 3, ignore_eos: true, stream: true }),
  });
  expect(res.status).toBe(200);
  const text = await res.text().catch((err: unknown) => `<broken body: ${String(err)}>`);
  if (model === "m-inspect") expect(text).toBe(errorEvent(model));
  else {
    // The event's first bytes went ahead of the watch, then a blank line ends them. The watch
    // reads behind the client's branch in batches, so on loopback a 3 MiB event can be through
    // whole before the watch reaches the cap; a 32 MiB one is cut short.
    expect(text.startsWith('data: {"id"')).toBe(true);
    expect(text.endsWith(`\n\n${errorEvent(model)}`)).toBe(true);
    if (mib === 32) expect(text.length).toBeLessThan(mib * MiB);
    else expect(text.length).toBeLessThan(mib * MiB + 1024);
  }
  const deadline = Date.now() + 5_000;
  let engine = await engineState(model);
  while (engine.activeRequests > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    engine = await engineState(model);
  }
  expect(engine.activeRequests).toBe(0);
}, 60_000);
