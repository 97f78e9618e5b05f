// The raw frame relay of streamed Generate (api/engine/raw-relay.ts): taken only when the
// client's wire format is the engine's (binary, uncompressed, no deadline), and then the
// client sees what the decoded path would have shown it: the same messages, the same end of
// stream, the same errors for an engine that fails or breaks off, and a client that leaves
// mid-stream aborts the decode engine.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { toJson } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { GenerateResponseSchema } from "../../src/gen/vllm_engine_pb.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { decodeStream, envelope, frames, GENERATE_URL, generateRequest } from "../support/engine-wire.js";

let cluster: TestCluster | undefined;
let debug: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  debug = vi.spyOn(console, "debug");
});
afterEach(async () => {
  debug.mockRestore();
  await cluster?.close();
  cluster = undefined;
});

/** How many Generate calls took the raw relay since the spy was set. */
const logged = (msg: string) => debug.mock.calls.filter((c: unknown[]) => String(c[0]).includes(msg)).length;
const rawRelays = () => logged("relaying the engine's frames as sent");
const nativeTails = () => logged("piping the rest of the engine's body natively");

const REQUEST = { input: { case: "text" as const, value: "relay me as you got me" }, samplingParams: { maxTokens: 24, ignoreEos: true }, stream: true };

interface Outcome {
  messages: unknown[];
  error?: ConnectError;
}

/** A streamed Generate through connect-es's own client, in the given wire format. */
async function viaClient(gw: TestGateway, protocol: "connect" | "grpc-web", binary: boolean, requestId: string, headers: Record<string, string> = {}): Promise<Outcome> {
  const out: Outcome = { messages: [] };
  try {
    for await (const m of gw.engineClient(protocol, binary).generate({ ...REQUEST, requestId }, { headers: { "x-model": MODEL, ...headers } })) {
      out.messages.push(toJson(GenerateResponseSchema, m));
    }
  } catch (err) {
    out.error = ConnectError.from(err);
  }
  return out;
}

const errorOf = (o: Outcome) => o.error && { code: o.error.code, message: o.error.rawMessage, gatewayCode: o.error.metadata.get("x-gateway-error-code") };

describe.each([
  // [client protocol, client binary, engine transport, extra client headers, raw?]
  ["connect", true, "connect", {}, true],
  ["grpc-web", true, "grpc-web", {}, true],
  ["connect", false, "connect", {}, false],
  ["grpc-web", false, "grpc-web", {}, false],
  ["grpc-web", true, "connect", {}, false],
  ["connect", true, "grpc-web", {}, false],
  ["connect", true, "connect", { "connect-accept-encoding": "gzip" }, false],
  ["grpc-web", true, "grpc-web", { "grpc-accept-encoding": "gzip" }, false],
  ["connect", true, "connect", { "connect-timeout-ms": "60000" }, false],
] as const)("client %s (binary %s), engines over %s, headers %j", (protocol, binary, transport, headers, raw) => {
  it(`${raw ? "takes the raw relay" : "keeps the decoded path"}; the messages are the decoded path's`, async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { transport }));
    const got = await viaClient(gw, protocol, binary, "relay-a", headers);
    expect(rawRelays()).toBe(raw ? 1 : 0);
    await cluster.reset(); // the same prompt again must not hit the prefix cache
    // The reference: connect-es's JSON client, always the decoded path.
    const reference = await viaClient(gw, protocol, false, "relay-a");
    expect(rawRelays()).toBe(raw ? 1 : 0);
    expect(got.error).toBeUndefined();
    expect(got.messages.length).toBeGreaterThan(2);
    expect(got.messages).toEqual(reference.messages);
    await gw.settle();
    const timings = gw.metrics.ofType("stream_complete");
    expect(timings).toHaveLength(2);
    expect(timings[0]!.outputTokens).toBe(timings[1]!.outputTokens);
    expect(timings[0]!.inputTokens).toBe(timings[1]!.inputTokens);
    expect(timings[0]!.ttftMs).toBeDefined();
    expect(gw.metrics.ofType("request").map((r) => r.status)).toEqual([200, 200]);
  });
});

it("debug.log_paths off (the default): the stream is relayed, and no path line is logged", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster, { logPaths: false }));
  const got = await viaClient(gw, "connect", true, "quiet", {});
  expect(got.error).toBeUndefined();
  expect(got.messages.length).toBeGreaterThan(2);
  expect(rawRelays()).toBe(0);
  expect(nativeTails()).toBe(0);
  await gw.settle();
  expect(gw.metrics.ofType("stream_complete")[0]!.outputTokens).toBeGreaterThan(0);
  expect(gw.metrics.ofType("request").map((r) => r.status)).toEqual([200]);
});

describe.each([
  ["Connect", "application/connect+proto", "connect", 0x02, "native"],
  ["gRPC-web", "application/grpc-web+proto", "grpc-web", 0x80, "native"],
  ["Connect", "application/connect+proto", "connect", 0x02, "frames"],
  ["gRPC-web", "application/grpc-web+proto", "grpc-web", 0x80, "frames"],
] as const)("%s raw bytes (%s, engines over %s, end flag %i, generate_relay %s)", (_name, contentType, transport, endFlag, generateRelay) => {
  const post = (gw: TestGateway, requestId: string, headers: Record<string, string> = {}) =>
    gw.fetch(GENERATE_URL, { method: "POST", headers: { "content-type": contentType, "x-model": MODEL, ...headers }, body: envelope(0, generateRequest({ ...REQUEST, requestId })) });

  it("the body is byte for byte what the decoded path sends, end-of-stream frame included", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const gw = testGateway(pairConfig(cluster, { transport, generateRelay }));
    const rawRes = await post(gw, "bytes");
    const rawBytes = new Uint8Array(await rawRes.arrayBuffer());
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(generateRelay === "native" ? 1 : 0);
    await cluster.reset();
    // A deadline keeps a request on the decoded path (connect-es enforces it).
    const timeout: Record<string, string> = transport === "connect" ? { "connect-timeout-ms": "60000" } : { "grpc-timeout": "60S" };
    const decodedRes = await post(gw, "bytes", timeout);
    const decodedBytes = new Uint8Array(await decodedRes.arrayBuffer());
    expect(rawRelays()).toBe(1);
    expect(rawBytes).toEqual(decodedBytes);
    expect([...rawRes.headers]).toEqual([...decodedRes.headers]);
    const { end } = await decodeStream(rawBytes, endFlag);
    expect(end).toBe(transport === "connect" ? "{}" : "grpc-status: 0\r\n");
  });

  it("a client that cancels mid-stream aborts the decode engine at once; no blocks stay pinned", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({}, { latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 40, perBlockPullMs: 0.01 } }) });
    const gw = testGateway(pairConfig(cluster, { transport, generateRelay }));
    const res = await post(gw, "leaves", {});
    const reader = res.body!.getReader();
    let seen = 0;
    while (seen < 3) {
      const r = await reader.read();
      if (r.done) throw new Error("ended early");
      seen += frames(r.value).length;
    }
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(generateRelay === "native" ? 1 : 0);
    expect((await cluster.stats("decode")).activeRequests).toBe(1);
    await reader.cancel();
    await eventually(async () => expect((await cluster!.stats("decode")).abortedRequestIds).toEqual(["leaves"]), 2_000);
    await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(0), 2_000);
    await gw.settle();
    await expectNoPinnedBlocks(cluster);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 499, errorCode: "client_cancelled" }]);
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });
});

// The frames relay's errors: the native relay's (the engine's own end passed on) are in
// engine-native-tail.test.ts.
describe.each(["connect", "grpc-web"] as const)("engine failures over %s: the frames relay's errors are the decoded path's", (transport) => {
  const faults = [
    ["an in-band error after some frames", { failAfterFrames: { frames: 3, code: "resource_exhausted", message: "kv cache full" }, leg: "decode" }],
    ["an error mid-stream", { failMidStream: { afterTokens: 4, code: "internal", message: "engine fell over" }, leg: "decode" }],
    ["a body cut inside a frame after the first message", { malformedResponse: "cut-after-frame", leg: "decode" }],
    ["a body that ends without end-of-stream", { malformedResponse: "no-end", leg: "decode" }],
    ["a body that breaks off (the engine's connection lost)", { malformedResponse: "reset-after-frame", leg: "decode" }],
  ] as const;

  it.each(faults)("%s", async (_name, fault) => {
    cluster = await startTestCluster({ engines: pairSpecs({ leaseMs: 500 }) });
    const gw = testGateway({ ...pairConfig(cluster, { transport, generateRelay: "frames" }), retry: { disabled: true } });
    await cluster.setFaults("decode", { ...fault, count: 1 } as never);
    const raw = await viaClient(gw, transport, true, "fails");
    expect(rawRelays()).toBe(1);
    await cluster.reset();
    await cluster.setFaults("decode", { ...fault, count: 1 } as never);
    const decoded = await viaClient(gw, transport, false, "fails");
    expect(rawRelays()).toBe(1);
    expect(raw.error).toBeDefined();
    expect(errorOf(raw)).toEqual(errorOf(decoded));
    expect(errorOf(raw)!.gatewayCode).toMatch(/^decode_/);
    expect(raw.messages).toEqual(decoded.messages);
    await gw.settle();
    const requests = gw.metrics.ofType("request");
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({ status: requests[1]!.status, errorCode: requests[1]!.errorCode });
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });
});

describe.each(["connect", "grpc-web"] as const)("a regular engine over %s (no PD decision opens the head)", (transport) => {
  it("the raw relay sends the head itself, and the messages are the decoded path's", async () => {
    cluster = await startTestCluster({ engines: [{ name: "engine", role: "both", kvConnector: "none", model: MODEL, port: 0, latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 } }] });
    const gw = testGateway({ models: { [MODEL]: { regular: [{ name: "engine", url: cluster.url("engine"), transport }] } }, debug: { log_paths: true } });
    const raw = await viaClient(gw, transport, true, "regular");
    expect(rawRelays()).toBe(1);
    await cluster.reset();
    const decoded = await viaClient(gw, transport, false, "regular");
    expect(raw.error).toBeUndefined();
    expect(raw.messages.length).toBeGreaterThan(2);
    expect(raw.messages).toEqual(decoded.messages);
    await gw.settle();
    expect(gw.metrics.ofType("request").map((r) => [r.backend, r.status])).toEqual([
      ["regular", 200],
      ["regular", 200],
    ]);
  });
});
