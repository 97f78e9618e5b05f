// A streamed Generate in Connect's binary, uncompressed form without a deadline is served by
// the Generate implementation directly (api/engine/direct-generate.ts), not through
// connect-es's handler. The same request with a deadline still goes through connect-es, so
// each case here is sent both ways and the two answers compared: status, headers, messages
// and the end-of-stream message (error, code and metadata) must be the same. On the frames
// relay every case; on the native one (the default) those where the gateway writes the end
// (an engine's own end-of-stream frame reaches a native tail's client as the engine wrote it,
// docs/configuration.md, so a broken decode stream ends differently there by design).
import { toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GenerateResponseSchema } from "../../src/gen/vllm_engine_pb.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, FAST, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { decodeStream, envelope, GENERATE_URL, generateRequest } from "../support/engine-wire.js";

let cluster: TestCluster;
type Kind = "native" | "frames" | "decoded" | "regular";
let gateways: Record<Kind, TestGateway>;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: [...pairSpecs(), { name: "whole", role: "both", kvConnector: "none", model: MODEL, port: 0, latency: FAST }] });
  gateways = {
    native: testGateway(pairConfig(cluster)),
    frames: testGateway(pairConfig(cluster, { generateRelay: "frames" })),
    // gRPC-web engines: no raw relay for a Connect client, every message written by the direct path
    decoded: testGateway(pairConfig(cluster, { transport: "grpc-web" })),
    // No PD decision either: the first message, not the early head, makes the response
    regular: testGateway({ models: { [MODEL]: { regular: [{ name: "whole", url: cluster.url("whole"), transport: "grpc-web" }] } } }),
  };
});
afterAll(async () => {
  await cluster.close();
});

/** Headers that differ between any two answers. */
const VOLATILE = new Set(["date", "x-request-id", "server-timing"]);

type Init = Parameters<typeof generateRequest>[0];

async function answer(gw: TestGateway, init: Init, way: "direct" | "connect-es", headers: Record<string, string>) {
  const res = await gw.fetch(GENERATE_URL, {
    method: "POST",
    headers: { "x-model": MODEL, "content-type": "application/connect+proto", ...headers, ...(way === "connect-es" ? { "connect-timeout-ms": "60000" } : {}) },
    body: envelope(0, generateRequest(init)),
  });
  const { messages, end } = await decodeStream(new Uint8Array(await res.arrayBuffer()), 0x02);
  return {
    status: res.status,
    headers: [...res.headers].filter(([k]) => !VOLATILE.has(k)),
    messages: messages.map((m) => toJson(GenerateResponseSchema, m)),
    end: JSON.parse(end ?? "null") as unknown,
  };
}

const text = (value: string) => ({ case: "text" as const, value });
type Case = [name: string, init: (id: string) => Init, headers?: Record<string, string>, fault?: () => Promise<void>];
const CASES: Case[] = [
  ["a completed stream", (id) => ({ requestId: id, input: text("hello there"), stream: true, samplingParams: { maxTokens: 6, ignoreEos: true } })],
  ["a non-streamed answer", (id) => ({ requestId: id, input: text("hello there"), stream: false, samplingParams: { maxTokens: 3, ignoreEos: true } })],
  ["an unknown model, refused before any message", (id) => ({ requestId: id, input: text("hi"), stream: true }), { "x-model": "no-such-model" }],
  ["a request the gateway refuses (n over the limit)", (id) => ({ requestId: id, input: text("hi"), stream: true, samplingParams: { n: 10_000 } })],
  ["a decode engine that fails to start", (id) => ({ requestId: id, input: text("hi"), stream: true }), {}, () => cluster.setFaults("decode", { failStart: { code: "invalid_argument", message: "bad" }, count: 1 })],
  [
    "a decode stream that breaks after its first frames",
    (id) => ({ requestId: id, input: text("hello there"), stream: true, samplingParams: { maxTokens: 8, ignoreEos: true } }),
    {},
    () => cluster.setFaults("decode", { failAfterFrames: { frames: 2, code: "internal", message: "boom" }, count: 1 }),
  ],
];

async function compare(relay: Kind, [name, init, headers = {}, fault]: Case): Promise<void> {
  const gw = gateways[relay];
  await fault?.();
  const direct = await answer(gw, init(`${relay} ${name}`), "direct", headers);
  await fault?.();
  const viaConnect = await answer(gw, init(`${relay} ${name}`), "connect-es", headers);
  expect(direct).toEqual(viaConnect);
  await gw.settle();
}

describe("the direct Generate answers as connect-es does", () => {
  it.each(CASES)("frames relay: %s", (...c) => compare("frames", c));
  it.each(CASES.slice(0, -1))("native relay: %s", (...c) => compare("native", c));
  it.each(CASES)("no raw relay (gRPC-web engines): %s", (...c) => compare("decoded", c));
  it.each(CASES.slice(0, 4))("a regular gRPC-web engine: %s", (...c) => compare("regular", c));
});

describe("a client that leaves the direct Generate", () => {
  it.each(["native", "decoded", "regular"] as const)("%s: after its first message, is recorded 499 and its legs end", async (kind) => {
    const gw = gateways[kind];
    const res = await gw.fetch(GENERATE_URL, {
      method: "POST",
      headers: { "x-model": MODEL, "content-type": "application/connect+proto" },
      body: envelope(0, generateRequest({ requestId: `leaves ${kind}`, input: text("hello there"), stream: true, samplingParams: { maxTokens: 400, ignoreEos: true } })),
    });
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await gw.settle();
    expect(gw.metrics.ofType("request").filter((r) => r.status === 499)).toMatchObject([{ errorCode: "client_cancelled" }]);
    await expectNoPinnedBlocks(cluster);
  });
});
