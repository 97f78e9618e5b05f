// Protocol-level mistakes on the VllmEngine surface (issue 16 item 4) and compressed messages
// (issue 15 item 7): each answered in the caller's protocol with a message that says what was
// expected and an x-gateway-error-code; never connect-es's empty 415 or an `internal`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";
import { decodeStream, envelope, GENERATE_URL, generateRequest, gzipBytes } from "../support/engine-wire.js";

let cluster: TestCluster;
let gw: TestGateway;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  gw = testGateway(pairConfig(cluster));
});
afterAll(async () => {
  await cluster.close();
});

const post = (url: string, headers: Record<string, string>, body: BodyInit) =>
  gw.fetch(url, { method: "POST", headers: { "x-model": MODEL, ...headers }, body });
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());
const request = (id: string, extra: Record<string, unknown> = {}) => generateRequest({ requestId: id, input: { case: "text", value: "hello there" }, ...extra });

describe("content types", () => {
  it("an unknown content type -> 415 with a Connect error body listing what Generate takes", async () => {
    const res = await post(GENERATE_URL, { "content-type": "text/plain" }, "hi");
    expect(res.status).toBe(415);
    expect(res.headers.get("x-gateway-error-code")).toBe("unsupported_content_type");
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toBe(
      'content-type: Generate is a server-streaming method; it takes application/connect+proto, application/connect+json, application/grpc-web+proto, application/grpc-web+json, not content-type "text/plain"',
    );
  });

  it("a unary content type on the streaming Generate, and a streaming one on unary Abort, say which kind the method is", async () => {
    const unaryOnStream = await post(GENERATE_URL, { "content-type": "application/json" }, "{}");
    expect(unaryOnStream.status).toBe(415);
    expect(((await unaryOnStream.json()) as { message: string }).message).toMatch(/Generate is a server-streaming method; it takes application\/connect\+proto/);
    const streamOnUnary = await post("http://gateway.test/vllm.grpc.engine.VllmEngine/Abort", { "content-type": "application/connect+json" }, "{}");
    expect(streamOnUnary.headers.get("x-gateway-error-code")).toBe("unsupported_content_type");
    const { end } = await decodeStream(await bytesOf(streamOnUnary), 0x02);
    expect(JSON.parse(end!).error.message).toMatch(/Abort is a unary method; it takes application\/proto, application\/json/);
  });

  it("gRPC-web text (base64) -> a gRPC-web trailers-only error naming the binary types", async () => {
    const res = await post(GENERATE_URL, { "content-type": "application/grpc-web-text" }, "AAAA");
    expect(res.headers.get("grpc-status")).toBe("3");
    expect(res.headers.get("x-gateway-error-code")).toBe("unsupported_content_type");
    expect(decodeURIComponent(res.headers.get("grpc-message")!)).toMatch(/application\/grpc-web\+proto/);
  });
});

describe("bodies that are not envelopes", () => {
  it("Connect streaming JSON sent without its envelope -> invalid_argument saying so, not resource_exhausted", async () => {
    const res = await post(GENERATE_URL, { "content-type": "application/connect+json" }, JSON.stringify({ requestId: "x", text: "hello" }));
    expect(res.headers.get("x-gateway-error-code")).toBe("invalid_envelope");
    const { end } = await decodeStream(await bytesOf(res), 0x02);
    const error = JSON.parse(end!).error as { code: string; message: string };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toMatch(/^body: the body is not a Connect envelope \(each message is a flags byte and a 4-byte big-endian length/);
    expect(error.message).not.toMatch(/readMaxBytes/);
  });

  it("gRPC-web sent as a bare protobuf message -> grpc-status 3 saying it is not a gRPC-web envelope", async () => {
    const res = await post(GENERATE_URL, { "content-type": "application/grpc-web+proto" }, request("bare"));
    expect(res.headers.get("grpc-status")).toBe("3");
    expect(res.headers.get("x-gateway-error-code")).toBe("invalid_envelope");
    expect(decodeURIComponent(res.headers.get("grpc-message")!)).toMatch(/^body: the body is not a gRPC-web envelope/);
  });
});

describe("compression", () => {
  it("accepts a gzip-compressed Connect envelope and answers it", async () => {
    const body = envelope(0x01, await gzipBytes(request("gz-connect", { stream: true })));
    const res = await post(GENERATE_URL, { "content-type": "application/connect+proto", "connect-content-encoding": "gzip" }, body);
    expect(res.status).toBe(200);
    const { messages, end } = await decodeStream(await bytesOf(res), 0x02);
    expect(JSON.parse(end!)).not.toHaveProperty("error");
    expect(messages.some((m) => m.response.case === "complete")).toBe(true);
  });

  it("accepts a gzip-compressed gRPC-web envelope", async () => {
    const body = envelope(0x01, await gzipBytes(request("gz-web")));
    const res = await post(GENERATE_URL, { "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" }, body);
    const { messages, end } = await decodeStream(await bytesOf(res), 0x80);
    expect(end).toMatch(/grpc-status:\s*0/);
    expect(messages.some((m) => m.response.case === "complete")).toBe(true);
  });

  it("compresses responses when the client accepts gzip (messages above 1 KiB)", async () => {
    const body = envelope(0x00, request("gz-accept", { samplingParams: { maxTokens: 700, ignoreEos: true } }));
    const res = await post(GENERATE_URL, { "content-type": "application/connect+proto", "connect-accept-encoding": "gzip" }, body);
    expect(res.headers.get("connect-content-encoding")).toBe("gzip");
    const { messages, compressedFrames } = await decodeStream(await bytesOf(res), 0x02);
    expect(compressedFrames).toBeGreaterThan(0);
    const complete = messages.find((m) => m.response.case === "complete");
    expect(complete?.response.case === "complete" && complete.response.value.outputIds.length).toBe(700);
  });

  it("accepts a gzip-compressed unary Connect body", async () => {
    const res = await post(
      "http://gateway.test/vllm.grpc.engine.VllmEngine/Abort",
      { "content-type": "application/proto", "content-encoding": "gzip" },
      await gzipBytes(new Uint8Array([0x0a, 0x02, 0x61, 0x62])), // request_ids: ["ab"]
    );
    expect(res.status).toBe(200);
    expect((await cluster.stats("decode")).abortedRequestIds).toContain("ab");
  });

  it("an encoding the gateway does not know -> unimplemented naming it, never internal", async () => {
    const body = envelope(0x01, new Uint8Array([1, 2, 3]));
    const res = await post(GENERATE_URL, { "content-type": "application/connect+proto", "connect-content-encoding": "br" }, body);
    const { end } = await decodeStream(await bytesOf(res), 0x02);
    const error = JSON.parse(end!).error as { code: string; message: string };
    expect(error.code).toBe("unimplemented");
    expect(error.message).toMatch(/"br".*gzip/);
  });

  it("a frame flagged gzip that is not gzip -> invalid_argument naming the body", async () => {
    const body = envelope(0x01, new Uint8Array([1, 2, 3, 4]));
    const res = await post(GENERATE_URL, { "content-type": "application/connect+proto", "connect-content-encoding": "gzip" }, body);
    const { end } = await decodeStream(await bytesOf(res), 0x02);
    const error = JSON.parse(end!).error as { code: string; message: string };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toMatch(/^body: message is not valid gzip/);
  });
});
