// An independent client (buf curl, with proto/ as its schema) streams a fan-out Generate
// through the Worker under `wrangler dev`, over Connect and over gRPC-web.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";

let cluster: RunningCluster;
let gateway: WranglerDev;
const FAST = { perPromptTokenMs: 0.01, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 };

beforeAll(async () => {
  cluster = await startCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "p", model: "m", port: 0, latency: FAST },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "d", model: "m", port: 0, latency: FAST },
    ],
  });
  gateway = await startWranglerDev({
    auth: { data_plane: "open" },
    models: { m: { prefill: [{ name: "prefill", url: cluster.engine("prefill").url }], decode: [{ name: "decode", url: cluster.engine("decode").url }] } },
  });
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

// Async on purpose: the sim runs in this process, so a blocking spawn would stall it.
async function bufCurl(protocol: "connect" | "grpcweb", body: unknown) {
  const res = await promisify(execFile)(
    "node_modules/.bin/buf",
    ["curl", "--protocol", protocol, "--schema", "proto", "-H", "x-model: m", "-v", "-d", JSON.stringify(body), `${gateway.url}/vllm.grpc.engine.VllmEngine/Generate`],
    { encoding: "utf8", timeout: 60_000 },
  );
  // Each response message is one pretty-printed JSON object on stdout.
  const messages = res.stdout.split(/\n(?=\{)/).filter((s) => s.trim()).map((s) => JSON.parse(s) as Record<string, Record<string, unknown>>);
  return { messages, verbose: res.stderr };
}

describe.each(["connect", "grpcweb"] as const)("buf curl --protocol %s", (protocol) => {
  it("streams a fan-out Generate, prefill skipped", async () => {
    const before = await (await fetch(`${cluster.engine("prefill").url}/sim/stats`)).json() as { generateRequests: number };
    const { messages, verbose } = await bufCurl(protocol, { request_id: `buf-${protocol}`, text: "hello from buf", stream: true, sampling_params: { n: 4, max_tokens: 4 } });
    const completes = messages.filter((m) => m.complete).map((m) => m.complete!);
    expect(completes.map((c) => c.index ?? 0).sort()).toEqual([0, 1, 2, 3]);
    expect(messages.some((m) => m.chunk)).toBe(true);
    expect(verbose.toLowerCase()).toContain("x-pd-prefill: skipped; reason=fanout");
    const after = await (await fetch(`${cluster.engine("prefill").url}/sim/stats`)).json() as { generateRequests: number };
    expect(after.generateRequests).toBe(before.generateRequests);
  });
});
