// Data-plane API keys, CORS, request limits and rate limiting, through the Worker.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
});
afterAll(async () => {
  await cluster.close();
});

const withKeys = () => ({ ...pairConfig(cluster), auth: { data_plane: "api_keys" } });

describe("data-plane API keys", () => {
  it("rejects a missing or wrong key on every surface, accepts a right one", async () => {
    const gw = testGateway(withKeys(), { API_KEYS: "k-one, k-two" });
    const chat = (auth?: string) =>
      gw.fetch("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
    const missing = await chat();
    expect(missing.status).toBe(401);
    expect(missing.headers.get("x-gateway-error-code")).toBe("invalid_api_key");
    expect(missing.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/^Authorization:/);
    expect((await chat("Bearer nope")).status).toBe(401);
    expect((await chat("Basic k-one")).status).toBe(401);
    // The right key passes auth (the model is served over VllmEngine, so the OpenAI surface says so).
    expect((await chat("Bearer k-two")).status).not.toBe(401);

    const denied = await generate(gw, { requestId: "a", input: { case: "text", value: "x" } });
    expect(denied.error?.code).toBe(Code.Unauthenticated);
    const grpcWeb = await generate(gw, { requestId: "a", input: { case: "text", value: "x" } }, { protocol: "grpc-web" });
    expect(grpcWeb.error?.code).toBe(Code.Unauthenticated);
    const ok = await generate(gw, { requestId: "b", input: { case: "text", value: "hello" } }, { headers: { authorization: "Bearer k-one" } });
    expect(ok.error).toBeUndefined();
  });

  it("refuses everything when api_keys is configured but no keys exist", async () => {
    const gw = testGateway(withKeys());
    const out = await generate(gw, { requestId: "c", input: { case: "text", value: "x" } }, { headers: { authorization: "Bearer anything" } });
    expect(out.error?.code).toBe(Code.Unauthenticated);
    expect((await cluster.stats("decode")).recent.some((r) => r.requestId === "c")).toBe(false);
  });

  it("/health stays public", async () => {
    const gw = testGateway(withKeys(), { API_KEYS: "k" });
    expect((await gw.fetch("http://gateway.test/health")).status).toBe(200);
  });
});

describe("CORS", () => {
  const config = () => ({ ...pairConfig(cluster), cors: { allowed_origins: ["https://app.example"] } });
  it("answers a preflight from an allowed origin with the Connect/gRPC-web headers", async () => {
    const gw = testGateway(config());
    const res = await gw.fetch("http://gateway.test/vllm.grpc.engine.VllmEngine/Generate", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type,x-grpc-web" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(res.headers.get("access-control-allow-headers")).toContain("x-grpc-web");
    expect(res.headers.get("access-control-allow-headers")).toContain("connect-protocol-version");
  });
  it("exposes grpc-status and x-pd-prefill on responses, and ignores other origins", async () => {
    const gw = testGateway(config());
    const ok = await gw.fetch("http://gateway.test/v1/models", { headers: { origin: "https://app.example" } });
    expect(ok.headers.get("access-control-expose-headers")).toContain("grpc-status");
    expect(ok.headers.get("access-control-expose-headers")).toContain("x-pd-prefill");
    const other = await gw.fetch("http://gateway.test/v1/models", { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("limits", () => {
  it("rejects an oversized header block (431) and a declared oversized body (413)", async () => {
    const gw = testGateway({ ...pairConfig(cluster), limits: { max_header_bytes: 2048, max_body_bytes: 4096 } });
    const big = await gw.fetch("http://gateway.test/v1/models", { headers: { "x-filler": "a".repeat(4000) } });
    expect(big.status).toBe(431);
    const body = await gw.fetch("http://gateway.test/v1/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": "100000" },
      body: "x".repeat(100_000),
    });
    expect(body.status).toBe(413);
    expect(body.headers.get("x-gateway-error-code")).toBe("body_too_large");
  });
});

describe("rate limiting", () => {
  it("answers 429 once the binding says the key is over its limit", async () => {
    let calls = 0;
    const limiter = { limit: async ({ key }: { key: string }) => ({ success: ++calls <= 2 && key.startsWith("key:") }) };
    const gw = testGateway(withKeys(), { API_KEYS: "k", RATE_LIMITER: limiter });
    const one = await generate(gw, { requestId: "r1", input: { case: "text", value: "x" } }, { headers: { authorization: "Bearer k" } });
    expect(one.error).toBeUndefined();
    await generate(gw, { requestId: "r2", input: { case: "text", value: "x" } }, { headers: { authorization: "Bearer k" } });
    const third = await generate(gw, { requestId: "r3", input: { case: "text", value: "x" } }, { headers: { authorization: "Bearer k" } });
    expect(third.error?.code).toBe(Code.ResourceExhausted);
  });
});

describe("config validated when serving starts", () => {
  it("/health answers 503 with every config error, naming its field", async () => {
    const gw = testGateway({ models: { m: { prefill: [{ url: "not a url" }] } }, retry: { max_retries: 0 } });
    const res = await gw.fetch("http://gateway.test/health");
    expect(res.status).toBe(503);
    expect(res.headers.get("x-gateway-error-code")).toBe("config_invalid");
    const body = (await res.json()) as { status: string; errors: string[] };
    expect(body.status).toBe("config_invalid");
    expect(body.errors.length).toBeGreaterThanOrEqual(2);
    expect(body.errors.some((e) => e.startsWith("retry.max_retries:"))).toBe(true);
  });
});
