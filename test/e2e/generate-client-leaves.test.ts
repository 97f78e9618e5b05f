// A client that closes a streamed binary Generate mid-decode, against a real workerd on its own
// socket: on the native default (generate_relay "native", model "m-native": the rest of the
// engine's body piped natively, api/engine/native-tail.ts) and on the frames relay ("m"), the
// decode engine's request must be aborted and nothing stay active or pinned. The time from the
// close to the engine's Abort is measured (docs/configuration.md "Generate relays").
import { afterAll, beforeAll, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { startCluster } from "../../sim/cluster.js";
import type { RunningCluster } from "../../sim/types.js";
import { GenerateRequestSchema } from "../../src/gen/vllm_engine_pb.js";
import { startWranglerDev, type WranglerDev } from "../../scripts/wrangler-dev.js";
import { workerdUrl } from "../support/workerd-socket.js";
import { envelope } from "../support/engine-wire.js";

const MODELS = ["m", "m-native"];
let cluster: RunningCluster;
let gateway: WranglerDev;
let base: string;
/** 20 ms per output token: a 300-token stream runs for 6 s, well past the close. */
const LATENCY = { perPromptTokenMs: 0.01, perOutputTokenMs: 20, perBlockPullMs: 0.01 };

beforeAll(async () => {
  cluster = await startCluster({
    engines: MODELS.flatMap((model) => [
      { name: `${model}-prefill`, role: "prefill" as const, kvConnector: "NixlConnector" as const, kvEngineId: `${model}-p`, model, port: 0, latency: LATENCY },
      { name: `${model}-decode`, role: "decode" as const, kvConnector: "NixlConnector" as const, kvEngineId: `${model}-d`, model, port: 0, latency: LATENCY },
    ]),
  });
  const pair = (model: string) => ({ prefill: [{ name: `${model}-prefill`, url: cluster.engine(`${model}-prefill`).url }], decode: [{ name: `${model}-decode`, url: cluster.engine(`${model}-decode`).url }] });
  gateway = await startWranglerDev({
    auth: { data_plane: "open" },
    models: { m: { ...pair("m"), generate_relay: "frames" }, "m-native": pair("m-native") },
    pd: { engine_info_ttl_ms: 0 },
  });
  base = await workerdUrl(gateway);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await cluster?.close();
});

async function decodeState(model: string) {
  return (await (await fetch(`${cluster.engine(`${model}-decode`).url}/sim/stats`)).json()) as { abortedRequestIds: string[]; activeRequests: number; blocksPinned: number };
}

/** Envelopes in `bytes` (whole ones; a client reading a few frames needs no more). */
function frameCount(bytes: Uint8Array): number {
  let n = 0;
  for (let at = 0; at + 5 <= bytes.length; n++) at += 5 + new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
  return n;
}

it.each(MODELS)("model %s: the client closes after a few frames; the decode engine's request is aborted and nothing stays active", async (model) => {
  const requestId = `leaves-${model}`;
  const client = new AbortController();
  const body = envelope(0, toBinary(GenerateRequestSchema, create(GenerateRequestSchema, { requestId, input: { case: "text", value: "tell me a long story" }, samplingParams: { maxTokens: 300, ignoreEos: true }, stream: true })));
  const res = await fetch(`${base}/vllm.grpc.engine.VllmEngine/Generate`, {
    method: "POST",
    headers: { "content-type": "application/connect+proto", "x-model": model },
    body,
    signal: client.signal,
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  let got = new Uint8Array(0);
  while (frameCount(got) < 6) {
    const r = await reader.read();
    if (r.done) throw new Error("the stream ended before the close");
    got = Uint8Array.from([...got, ...r.value]);
  }
  const closedAt = Date.now();
  client.abort();
  const deadline = closedAt + 12_000;
  let decode = await decodeState(model);
  while (!decode.abortedRequestIds.includes(requestId) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    decode = await decodeState(model);
  }
  const abortedAfterMs = Date.now() - closedAt;
  console.log(JSON.stringify({ model, abortedAfterMs }));
  // An engine request that ran to its end is not in the aborted list: the close reached it.
  expect(decode.abortedRequestIds).toContain(requestId);
  while (decode.activeRequests > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    decode = await decodeState(model);
  }
  expect(decode.activeRequests).toBe(0);
  expect(decode.blocksPinned).toBe(0);
}, 60_000);
