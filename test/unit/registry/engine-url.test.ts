// The registration URL rules and the allowed_hosts matcher, by table.
import { describe, expect, it } from "vitest";
import { checkEngineUrl, healthProbeUrl, hostAllowed, normalizeEngineUrl, parseHostPattern } from "../../../src/routing/engine-url.js";

describe("hostAllowed", () => {
  it.each([
    // [url, patterns, allowed]
    ["http://127.0.0.1:8000", ["127.0.0.1"], true],
    ["http://127.0.0.1:8000", ["127.0.0.1:8000"], true],
    ["http://127.0.0.1:8001", ["127.0.0.1:8000"], false],
    ["http://127.0.0.1", ["127.0.0.1:80"], true], // default port counts
    ["https://127.0.0.1", ["127.0.0.1:443"], true],
    ["https://127.0.0.1", ["127.0.0.1:80"], false],
    ["http://127.0.0.2:8000", ["127.0.0.1"], false],
    ["http://10.0.0.7:8000", ["10.0.0.*"], true],
    ["http://10.0.1.7:8000", ["10.0.0.*"], false],
    ["http://10.0.0.7.evil.com", ["10.0.0.*"], false], // * never crosses a dot
    ["https://gpu-3.prod.example.com", ["*.prod.example.com"], true],
    ["https://a.b.prod.example.com", ["*.prod.example.com"], false],
    ["https://prod.example.com", ["*.prod.example.com"], false],
    ["https://evilprod.example.com", ["*.prod.example.com"], false],
    ["https://gpu-3.internal", ["gpu-*.internal"], true],
    ["https://cpu-3.internal", ["gpu-*.internal"], false],
    ["https://GPU-3.Internal", ["gpu-*.INTERNAL"], true], // case-insensitive
    ["http://localhost:8000", ["127.0.0.1"], false],
    ["http://localhost:8000", ["*"], true], // one label
    ["http://a.b:8000", ["*"], false],
    ["http://[::1]:8000", ["[::1]"], true],
    ["http://[::1]:8000", ["[::1]:8000"], true],
    ["http://[::1]:8000", ["[::1]:9000"], false],
    ["http://2130706433:8000", ["127.0.0.1"], true], // the URL parser normalizes numeric hosts
    ["http://127.0.0.1:8000", [], false],
    ["http://127.0.0.1:8000", ["bad pattern!", "127.0.0.1"], true],
    ["http://127.0.0.1:8000", ["127.0.0.1:notaport"], false],
  ])("%s against %j -> %s", (url, patterns, allowed) => {
    expect(hostAllowed(new URL(url), patterns)).toBe(allowed);
  });
});

describe("parseHostPattern", () => {
  it.each(["", "a b", "host:", "host:123456", "[::1", "[::1]x", "a/b"])("refuses %j", (p) => {
    expect(parseHostPattern(p)).toBeUndefined();
  });
  it("normalizes the port", () => {
    expect(parseHostPattern("h:08000")?.port).toBe("8000");
    expect(parseHostPattern("h")?.port).toBeUndefined();
  });
});

describe("checkEngineUrl", () => {
  const allow = ["127.0.0.1", "*.example.com"];
  it.each([
    ["http://127.0.0.1:8000", { ok: true, url: "http://127.0.0.1:8000" }],
    ["HTTP://127.0.0.1:8000/", { ok: true, url: "http://127.0.0.1:8000" }],
    ["https://e.example.com:443/proxy/v1/", { ok: true, url: "https://e.example.com/proxy/v1" }],
    ["http://127.0.0.1:80", { ok: true, url: "http://127.0.0.1" }],
    ["127.0.0.1:8000", { ok: false, code: "invalid_engine_url", status: 400 }],
    ["nope", { ok: false, code: "invalid_engine_url", status: 400 }],
    ["ftp://127.0.0.1", { ok: false, code: "invalid_engine_url", status: 400 }],
    ["grpc://127.0.0.1:50051", { ok: false, code: "invalid_engine_url", status: 400 }],
    ["http://user@127.0.0.1", { ok: false, code: "invalid_engine_url", message: "url: must not contain credentials" }],
    ["http://:pw@127.0.0.1", { ok: false, code: "invalid_engine_url", message: "url: must not contain credentials" }],
    ["http://127.0.0.1/?x=1", { ok: false, code: "invalid_engine_url" }],
    ["http://127.0.0.1/#f", { ok: false, code: "invalid_engine_url" }],
    ["http://10.0.0.1", { ok: false, code: "engine_url_not_allowed", status: 403 }],
    ["http://127.0.0.1@10.0.0.1", { ok: false, code: "invalid_engine_url" }], // userinfo trick
  ])("%s", (raw, expected) => {
    expect(checkEngineUrl(raw, allow)).toMatchObject(expected);
  });

  it("says why an empty allowlist refuses everything", () => {
    expect(checkEngineUrl("http://127.0.0.1", [])).toMatchObject({ status: 403, message: expect.stringMatching(/allowed_hosts is empty/) });
  });
});

describe("URL helpers", () => {
  it.each([
    ["http://h:8000", "/health", "http://h:8000/health"],
    ["http://h:8000/", "/health", "http://h:8000/health"],
    ["http://h:8000/v1", "/health", "http://h:8000/health"],
    ["http://h:8000/proxy", "/ping", "http://h:8000/proxy/ping"],
  ])("healthProbeUrl(%s, %s) = %s", (base, endpoint, out) => {
    expect(healthProbeUrl(base, endpoint)).toBe(out);
  });
  it("normalizeEngineUrl matches checkEngineUrl's form and passes junk through", () => {
    expect(normalizeEngineUrl("HTTP://A:80/x/")).toBe("http://a/x");
    expect(normalizeEngineUrl("junk")).toBe("junk");
  });
});
