import { describe, expect, it } from "vitest";
import { checkProtoBody, unframe } from "../../src/api/engine/body-check.js";
import { wireFormatOf } from "../../src/api/engine/content-types.js";
import { VllmEngine } from "../../src/gen/vllm_engine_pb.js";

const frame = (flags: number, payload: number[]) => [flags, 0, 0, 0, payload.length, ...payload];

describe("unframe", () => {
  it.each([
    [[...frame(0, [1, 2])], 1],
    [[...frame(0, [1]), ...frame(0x80, [9])], 1],
    [[...frame(1, [7])], 1],
  ])("%j -> %d message(s)", (bytes, n) => {
    const out = unframe(new Uint8Array(bytes));
    expect(typeof out).not.toBe("string");
    expect((out as unknown[]).length).toBe(n);
  });
  it.each([
    [[0, 0, 0]],
    [[0, 0, 0, 0, 9, 1]],
    [[...frame(0x80, [1])]],
    [[0x7b, 0x22, 0x61, 0x22, 0x3a, 0x31, 0x7d]], // bare JSON: '{' is no flags byte
  ])("%j is broken framing", (bytes) => {
    expect(typeof unframe(new Uint8Array(bytes))).toBe("string");
  });
});

describe("checkProtoBody", () => {
  const req = (ct: string, body: number[], path = "Generate", headers: Record<string, string> = {}) =>
    new Request(`http://g/vllm.grpc.engine.VllmEngine/${path}`, { method: "POST", headers: { "content-type": ct, ...headers }, body: new Uint8Array(body) });
  // As the router calls it: the method from the path, the format from the content type.
  const check = (r: Request, maxBytes: number) => {
    const method = VllmEngine.methods.find((m) => r.url.endsWith(`/${m.name}`))!;
    return checkProtoBody(r, method, wireFormatOf(r.headers.get("content-type"), method)!, maxBytes);
  };
  it("passes a valid GenerateRequest on, body intact", async () => {
    const msg = [0x0a, 0x01, 0x61]; // request_id = "a"
    const out = await check(req("application/connect+proto", frame(0, msg)), 1024);
    expect(out).not.toBeInstanceOf(Response);
    expect([...((out as { bytes: Uint8Array }).bytes)]).toEqual(frame(0, msg));
    expect((out as { message: { requestId: string } }).message.requestId).toBe("a"); // decoded once, for the direct Generate
  });
  it("hands on no decoded message unless the body had exactly one", async () => {
    const two = await check(req("application/connect+proto", [...frame(0, [0x0a, 0x01, 0x61]), ...frame(0, [0x0a, 0x01, 0x62])]), 1024);
    expect(two).toHaveProperty("bytes");
    expect(two).not.toHaveProperty("message");
    // one message and a frame flagged end-stream (Connect) or trailers (gRPC-web): connect-es judges those
    for (const flags of [0x02, 0x80]) {
      const withEnd = await check(req("application/connect+proto", [...frame(0, [0x0a, 0x01, 0x61]), ...frame(flags, [0x7b, 0x7d])]), 1024);
      expect(withEnd).not.toHaveProperty("message");
    }
  });
  it("answers 400 naming the body for an unparsable message", async () => {
    const out = (await check(req("application/connect+proto", frame(0, [0x00])), 1024)) as Response;
    expect(out.headers.get("x-gateway-error-code")).toBe("invalid_request");
    const end = new TextDecoder().decode(new Uint8Array(await out.arrayBuffer()).subarray(5));
    expect(JSON.parse(end).error.message).toMatch(/^body: not a valid vllm\.grpc\.engine\.GenerateRequest/);
  });
  it("answers 413 past the limit, and leaves JSON to Connect", async () => {
    expect(((await check(req("application/grpc-web+proto", Array(2000).fill(0)), 100)) as Response).headers.get("x-gateway-error-code")).toBe("body_too_large");
    const json = req("application/json", [0x7b, 0x7d], "Abort", { "content-length": "2" });
    expect(await check(json, 10)).toEqual({}); // unread: Connect reads it
    expect(json.bodyUsed).toBe(false);
  });
});
