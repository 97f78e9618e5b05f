// Admin API pure helpers: bearer parsing, constant-time comparison, body validation, the view.
import { describe, expect, it } from "vitest";
import { bearerToken, constantTimeEqual, tokenMatches } from "../../../src/api/admin/auth.js";
import { parseBody, registerBodySchema, updateBodySchema } from "../../../src/api/admin/bodies.js";
import { engineView } from "../../../src/api/admin/view.js";
import type { RegistryEngine } from "../../../src/routing/registry-types.js";

describe("bearerToken", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer abc", "abc"],
    ["BEARER   abc  ", "abc"],
    ["Bearer", undefined],
    ["Bearer a b", undefined],
    ["Basic abc", undefined],
    ["abc", undefined],
    ["", undefined],
    [null, undefined],
  ])("%j -> %j", (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe("token comparison", () => {
  it("constantTimeEqual compares bytes and lengths", () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([1]), new Uint8Array([1, 0]))).toBe(false);
  });
  it.each([
    ["t", "t", true],
    ["t", "tt", false],
    ["", "t", false],
    ["secret-token", "secret-tokeN", false],
  ])("tokenMatches(%j, %j) = %s", async (given, expected, ok) => {
    expect(await tokenMatches(given, expected)).toBe(ok);
  });
});

describe("parseBody", () => {
  const fail = (schema: Parameters<typeof parseBody>[0], text: string) => {
    try {
      parseBody(schema, text);
    } catch (err) {
      return err as { code: string; status: number; param?: string; message: string };
    }
    throw new Error("expected a failure");
  };

  it("applies the engine schema's defaults", () => {
    expect(parseBody(registerBodySchema, JSON.stringify({ url: "http://h:1", model: "m", role: "prefill" }))).toEqual({
      url: "http://h:1", model: "m", role: "prefill", transport: "connect", labels: {}, cluster: "default",
    });
  });

  it.each([
    ["{", null, /^body is not valid JSON/],
    ["null", null, /^body must be a JSON object$/],
    ['"x"', null, /^body must be a JSON object$/],
    ['{"url":"http://h:1","role":"prefill"}', "model", /^model: /],
    ['{"url":"http://h:1","model":"","role":"prefill"}', "model", /^model: /],
    ['{"url":"http://h:1","model":"m","role":"prefill","bootstrap_port":70000}', "bootstrap_port", /^bootstrap_port: /],
    ['{"url":"http://h:1","model":"m","role":"prefill","extra":1,"more":2}', "extra", /^extra: unknown field$/],
    ['{"model":"m"}', "url", /^url: .*; role: /],
    ['{"url":"http://h:1","model":"m","role":"prefill","cluster":"-bad"}', "cluster", /^cluster: must be 1-64 letters/],
  ])("%s -> 400 naming %s", (text, param, message) => {
    const err = fail(registerBodySchema, text);
    expect(err).toMatchObject({ code: "invalid_request", status: 400 });
    expect(err.param).toBe(param ?? undefined);
    expect(err.message).toMatch(message);
  });

  it("PUT bodies may carry a status", () => {
    expect(parseBody(updateBodySchema, JSON.stringify({ url: "http://h:1", model: "m", role: "decode", status: "draining" })).status).toBe("draining");
    expect(fail(updateBodySchema, JSON.stringify({ url: "http://h:1", model: "m", role: "decode", status: "gone" })).param).toBe("status");
  });
});

describe("engineView", () => {
  const engine: RegistryEngine = {
    id: "r", model: "m", role: "decode", url: "http://r:1", transport: "connect", labels: {}, status: "active",
    discovered: {}, created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z",
  };
  const settings = { failure_threshold: 2, success_threshold: 1, timeout_secs: 10, disabled: false };

  it("shows absent state as null", () => {
    expect(engineView({ engine }, settings)).toEqual({ source: "registry", ...engine, cluster: "default", health: null, breaker: null });
  });

  it("shows a registry engine's cluster", () => {
    expect(engineView({ engine: { ...engine, cluster: "eu-west" } }, settings).cluster).toBe("eu-west");
  });

  it("shows health and breaker in snake_case, the breaker as routing sees it now", () => {
    const v = engineView(
      {
        engine,
        health: { status: "not_ready", consecutiveFailures: 3, consecutiveSuccesses: 0, pendingProbes: 0, lastProbeAt: 0, lastError: "boom" },
        breaker: { state: "open", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: 1_000 },
      },
      settings,
      undefined,
      12_000,
    );
    expect(v.health).toEqual({ status: "not_ready", consecutive_successes: 0, consecutive_failures: 3, last_probe_at: "1970-01-01T00:00:00.000Z", last_error: "boom" });
    expect(v.breaker).toEqual({ state: "half_open", consecutive_failures: 0, consecutive_successes: 0, changed_at: "1970-01-01T00:00:01.000Z" });
  });
});
