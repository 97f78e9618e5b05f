import { describe, expect, it } from "vitest";
import { bearerToken, digestsEqual, isValidKey } from "../../src/middleware/auth.js";
import { headerBytes } from "../../src/middleware/limits.js";
import { reject } from "../../src/errors/render.js";

describe("auth helpers", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer  abc ", "abc"],
    ["Basic abc", undefined],
    ["Bearer", undefined],
    [undefined, undefined],
    ["Bearer a b", undefined],
  ])("bearerToken(%j) = %j", (h, t) => expect(bearerToken(h)).toBe(t));
  it("constant-time digest compare", () => {
    expect(digestsEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(digestsEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false);
    expect(digestsEqual(new Uint8Array([1]), new Uint8Array([1, 2]))).toBe(false);
  });
  it("keys list: any listed key, trimmed; nothing else", async () => {
    expect(await isValidKey("b", " a , b ")).toBe(true);
    expect(await isValidKey("c", "a,b")).toBe(false);
    expect(await isValidKey("", "a,,b")).toBe(false);
  });
});

describe("rejections in the caller's protocol", () => {
  const req = (ct: string, path = "/vllm.grpc.engine.VllmEngine/Generate") => new Request(`http://g${path}`, { method: "POST", headers: { "content-type": ct } });
  it("gRPC-web: trailers-only 200 with grpc-status", () => {
    const r = reject(req("application/grpc-web+proto"), 401, "invalid_api_key", "no key");
    expect([r.status, r.headers.get("grpc-status"), r.headers.get("grpc-message")]).toEqual([200, "16", "no%20key"]);
  });
  it("Connect streaming: an end-stream frame with the Connect code", async () => {
    const r = reject(req("application/connect+proto"), 429, "rate_limited", "slow down");
    const bytes = new Uint8Array(await r.arrayBuffer());
    expect(bytes[0]).toBe(2);
    expect(JSON.parse(new TextDecoder().decode(bytes.slice(5)))).toEqual({ error: { code: "resource_exhausted", message: "slow down" } });
  });
  it("Connect unary: JSON error with the HTTP status", async () => {
    const r = reject(req("application/json"), 401, "invalid_api_key", "no key");
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ code: "unauthenticated", message: "no key" });
  });
  it("OpenAI: the OpenAI error shape", async () => {
    const r = reject(req("application/json", "/v1/chat/completions"), 413, "body_too_large", "body: too big");
    expect(r.headers.get("x-gateway-error-code")).toBe("body_too_large");
    expect(await r.json()).toEqual({ error: { message: "body: too big", type: "invalid_request_error", param: null, code: "body_too_large" } });
  });
  it("header bytes count names and values", () => {
    expect(headerBytes(new Headers({ a: "bc" }))).toBe(7);
  });
});
