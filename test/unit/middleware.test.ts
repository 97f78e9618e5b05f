import { describe, expect, it } from "vitest";
import { bearerToken, digestsEqual, isValidKey, presentedKey } from "../../src/middleware/auth.js";
import { headerBytes } from "../../src/middleware/limits.js";

describe("auth helpers", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer  abc ", "abc"],
    ["Basic abc", undefined],
    ["Bearer", undefined],
    [undefined, undefined],
    ["Bearer a b", undefined],
  ])("bearerToken(%j) = %j", (h, t) => expect(bearerToken(h)).toBe(t));
  it.each([
    [{ authorization: "Bearer k1" }, "k1"],
    [{ "x-api-key": "k2" }, "k2"],
    [{ authorization: "Bearer k1", "x-api-key": "k2" }, "k1"],
    [{ "x-api-key": "  " }, undefined],
    [{ authorization: "Basic abc" }, undefined],
    [{}, undefined],
  ])("presentedKey(%j) = %j: Bearer first, then Anthropic's x-api-key", (h, t) => expect(presentedKey(new Headers(h))).toBe(t));
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

describe("limits", () => {
  it("header bytes count names and values", () => {
    expect(headerBytes(new Headers({ a: "bc" }))).toBe(7);
  });
});
