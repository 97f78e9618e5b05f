// generate_relay "native" (the default), how each ending reaches a binary Connect or gRPC-web
// client (api/engine/native-tail.ts): a completed stream and a client that leaves are in
// engine-raw-relay.test.ts (bytes as the decoded path's; the decode engine's Abort). Here: the
// engine's own error end passed on as the engine wrote it, and the gateway's error end after a
// body without end-of-stream frame, broken off (connection lost) or cut inside a frame;
// metrics as the frames relay's.
// The same endings over a stand-in leg in Node are in test/unit/engine-surface/native-tail.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { GenerateResponseSchema } from "../../src/gen/vllm_engine_pb.js";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

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

const logged = (msg: string) => debug.mock.calls.filter((c: unknown[]) => String(c[0]).includes(msg)).length;
const rawRelays = () => logged("relaying the engine's frames as sent");
const nativeTails = () => logged("piping the rest of the engine's body natively");

const REQUEST = { input: { case: "text" as const, value: "pipe the rest natively" }, samplingParams: { maxTokens: 24, ignoreEos: true }, stream: true };

interface Outcome {
  messages: unknown[];
  error?: ConnectError;
}

async function viaClient(gw: TestGateway, protocol: "connect" | "grpc-web", binary: boolean, requestId: string): Promise<Outcome> {
  const out: Outcome = { messages: [] };
  try {
    for await (const m of gw.engineClient(protocol, binary).generate({ ...REQUEST, requestId }, { headers: { "x-model": MODEL } })) out.messages.push(toJson(GenerateResponseSchema, m));
  } catch (err) {
    out.error = ConnectError.from(err);
  }
  return out;
}

const errorOf = (o: Outcome) => o.error && { code: o.error.code, message: o.error.rawMessage, gatewayCode: o.error.metadata.get("x-gateway-error-code") };

describe.each(["connect", "grpc-web"] as const)("generate_relay native (the default), client and engines over %s", (transport) => {
  async function setUp(fault?: Record<string, unknown>) {
    cluster = await startTestCluster({ engines: pairSpecs({ leaseMs: 500 }) });
    const gw = testGateway({ ...pairConfig(cluster, { transport }), retry: { disabled: true } });
    if (fault) await cluster.setFaults("decode", { ...fault, leg: "decode", count: 1 } as never);
    return gw;
  }

  it("completed: the decoded path's messages; timing and usage recorded", async () => {
    const gw = await setUp();
    const got = await viaClient(gw, transport, true, "done");
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(1);
    expect(got.error).toBeUndefined();
    await gw.settle();
    expect((await cluster!.stats("decode")).abortsReceived).toBe(0); // never after an end
    await cluster!.reset();
    const reference = await viaClient(gw, transport, false, "done");
    expect(got.messages).toEqual(reference.messages);
    await gw.settle();
    const [native, decoded] = gw.metrics.ofType("stream_complete");
    expect(native!.outputTokens).toBe(24);
    expect(native).toMatchObject({ outputTokens: decoded!.outputTokens, inputTokens: decoded!.inputTokens });
    expect(native!.ttftMs).toBeDefined();
    expect(native!.tpotMs).toBeGreaterThan(0);
    expect(gw.metrics.ofType("request").map((r) => r.status)).toEqual([200, 200]);
  });

  it.each([
    ["an in-band error after some frames", { failAfterFrames: { frames: 3, code: "resource_exhausted", message: "kv cache full" } }, Code.ResourceExhausted, "kv cache full"],
    ["an error mid-stream", { failMidStream: { afterTokens: 4, code: "internal", message: "engine fell over" } }, Code.Internal, "engine fell over"],
  ] as const)("%s: the engine's error end as the engine wrote it; metrics as the frames relay's", async (_name, fault, code, message) => {
    const gw = await setUp(fault);
    const got = await viaClient(gw, transport, true, "fails");
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(1);
    expect(got.messages.length).toBeGreaterThan(0);
    expect(errorOf(got)).toMatchObject({ code, message, gatewayCode: null });
    await gw.settle();
    // The engine ended the stream: no Abort, though the client may close on the end frame
    // before the watch behind it read that frame.
    expect((await cluster!.stats("decode")).abortsReceived).toBe(0);
    await cluster!.reset();
    await cluster!.setFaults("decode", { ...fault, leg: "decode", count: 1 } as never);
    const decoded = await viaClient(gw, transport, false, "fails");
    expect(got.messages).toEqual(decoded.messages);
    await gw.settle();
    const [native, reference] = gw.metrics.ofType("request");
    expect(native).toMatchObject({ status: reference!.status, errorCode: reference!.errorCode });
    expect(native!.errorCode).toMatch(/^decode_/);
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });

  it("a body that ends without end-of-stream: the gateway's error end, as the decoded path's", async () => {
    const gw = await setUp({ malformedResponse: "no-end" });
    const got = await viaClient(gw, transport, true, "no-end");
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(1);
    await cluster!.reset();
    await cluster!.setFaults("decode", { malformedResponse: "no-end", leg: "decode", count: 1 } as never);
    const decoded = await viaClient(gw, transport, false, "no-end");
    expect(got.messages).toEqual(decoded.messages);
    expect(errorOf(got)).toEqual(errorOf(decoded));
    expect(errorOf(got)!.gatewayCode).toBe("decode_stream_error");
    await gw.settle();
    const [native, reference] = gw.metrics.ofType("request");
    expect(native).toMatchObject({ status: reference!.status, errorCode: "decode_stream_error" });
  });

  it("a body that breaks off (the engine's connection lost): the gateway's error end, as the decoded path's", async () => {
    const gw = await setUp({ malformedResponse: "reset-after-frame" });
    const got = await viaClient(gw, transport, true, "reset");
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(1);
    await cluster!.reset();
    await cluster!.setFaults("decode", { malformedResponse: "reset-after-frame", leg: "decode", count: 1 } as never);
    const decoded = await viaClient(gw, transport, false, "reset");
    expect(got.messages).toHaveLength(1);
    expect(got.messages).toEqual(decoded.messages);
    expect(errorOf(got)).toEqual(errorOf(decoded));
    expect(errorOf(got)!.gatewayCode).toMatch(/^decode_/);
    await gw.settle();
    const [native, reference] = gw.metrics.ofType("request");
    expect(native).toMatchObject({ status: reference!.status, errorCode: reference!.errorCode });
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });

  it("a body cut inside a frame: the client's decoder fails on the broken frame (an error, never a clean end)", async () => {
    const gw = await setUp({ malformedResponse: "cut-after-frame" });
    const got = await viaClient(gw, transport, true, "cut");
    expect(rawRelays()).toBe(1);
    expect(nativeTails()).toBe(1);
    expect(got.error).toBeDefined();
    // The body closes right after the cut frame (no gateway end behind it: the client would
    // read it as the frame's rest): the client's own decoder fails at once.
    expect(got.error!.rawMessage).toMatch(/incomplete envelope/);
    expect(got.messages).toHaveLength(1);
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ errorCode: "decode_stream_error" }]);
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });
});
