// A streamed Generate in Connect's or gRPC-web's binary, uncompressed form without a deadline is served by
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

type Protocol = "connect" | "grpc-web";
/** Per protocol: the content type, the deadline header that hands a call to connect-es, the
 *  end frame's flag. */
const WIRE = {
  connect: { contentType: "application/connect+proto", deadline: { "connect-timeout-ms": "60000" }, endFlag: 0x02 },
  "grpc-web": { contentType: "application/grpc-web+proto", deadline: { "grpc-timeout": "60S" }, endFlag: 0x80 },
} as const;

function post(gw: TestGateway, protocol: Protocol, init: Init, headers: Record<string, string>) {
  return gw.fetch(GENERATE_URL, {
    method: "POST",
    headers: { "x-model": MODEL, "content-type": WIRE[protocol].contentType, ...headers },
    body: envelope(0, generateRequest(init)),
  });
}

async function answer(gw: TestGateway, protocol: Protocol, init: Init, way: "direct" | "connect-es", headers: Record<string, string>) {
  const res = await post(gw, protocol, init, { ...headers, ...(way === "connect-es" ? WIRE[protocol].deadline : {}) });
  const { messages, end } = await decodeStream(new Uint8Array(await res.arrayBuffer()), WIRE[protocol].endFlag);
  return {
    status: res.status,
    headers: [...res.headers].filter(([k]) => !VOLATILE.has(k)),
    messages: messages.map((m) => toJson(GenerateResponseSchema, m)),
    end,
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

async function compare(protocol: Protocol, relay: Kind, [name, init, headers = {}, fault]: Case): Promise<void> {
  const gw = gateways[relay];
  const id = `${protocol} ${relay} ${name}`;
  await fault?.();
  const direct = await answer(gw, protocol, init(id), "direct", headers);
  await fault?.();
  const viaConnect = await answer(gw, protocol, init(id), "connect-es", headers);
  expect(direct).toEqual(viaConnect);
  await gw.settle();
}

// Where the raw relay's native tail runs (the engine speaks the client's protocol), the broken
// decode stream is left out (the engine's own end reaches the client, by design).
const ALL = CASES;
const NATIVE_TAIL = CASES.slice(0, -1);
const WHOLE_ENGINE = CASES.slice(0, 4); // no decode engine to break

describe.each(["connect", "grpc-web"] as const)("the direct Generate answers as connect-es does: %s", (protocol) => {
  const tail = (kind: "native" | "decoded") => ((kind === "native") === (protocol === "connect") ? NATIVE_TAIL : ALL);
  it.each(ALL)("frames relay: %s", (...c) => compare(protocol, "frames", c));
  it.each(tail("native"))("connect engines: %s", (...c) => compare(protocol, "native", c));
  it.each(tail("decoded"))("gRPC-web engines: %s", (...c) => compare(protocol, "decoded", c));
  it.each(WHOLE_ENGINE)("a regular gRPC-web engine: %s", (...c) => compare(protocol, "regular", c));
});

// A client that stops reading after the first message ends the call the same way whichever
// serves it: recorded 499 client_cancelled, its legs ended. On the regular engine the first
// message, not the early head, makes the response (early-head.ts `leavingSeen`).
describe("a client that leaves after its first message", () => {
  const LEAVING = (["connect", "grpc-web"] as const).flatMap((protocol) =>
    (["native", "decoded", "regular"] as const).flatMap((kind) => (["direct", "connect-es"] as const).map((way) => [protocol, kind, way] as const)),
  );
  it.each(LEAVING)("%s, %s engines, %s: recorded 499, its legs end", async (protocol, kind, way) => {
    const gw = gateways[kind];
    const before = gw.metrics.ofType("request").length;
    const init = { requestId: `leaves ${protocol} ${kind} ${way}`, input: text("hello there"), stream: true, samplingParams: { maxTokens: 400, ignoreEos: true } };
    const res = await post(gw, protocol, init, way === "connect-es" ? WIRE[protocol].deadline : {});
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await gw.settle();
    expect(gw.metrics.ofType("request").slice(before)).toMatchObject([{ status: 499, errorCode: "client_cancelled" }]);
    await expectNoPinnedBlocks(cluster);
  });
});
