import { describe, expect, it } from "vitest";
import { legStatusError } from "../../../src/pd/leg-errors.js";
import { passedThroughStatus, upstreamErrorMessage } from "../../../src/backends/openai-http.js";
import { openAiErrorType } from "../../../src/errors/openai.js";

describe("upstreamErrorMessage: error.message, else message, else the raw body", () => {
  it.each([
    ["vLLM shape", '{"error":{"message":"bad n","type":"BadRequestError","param":"n","code":400}}', "bad n"],
    ["top-level message", '{"message":"slow down","object":"error"}', "slow down"],
    ["error as a string", '{"error":"overloaded"}', "overloaded"],
    ["error.message wins over message", '{"error":{"message":"inner"},"message":"outer"}', "inner"],
    ["JSON without either -> raw", '{"detail":"x"}', '{"detail":"x"}'],
    ["not JSON -> raw, trimmed", "  upstream connect error \n", "upstream connect error"],
    ["empty", "", "(empty body)"],
  ])("%s", (_name, text, expected) => {
    expect(upstreamErrorMessage(text)).toBe(expected);
  });
  it("caps a huge body", () => {
    const m = upstreamErrorMessage("x".repeat(10_000));
    expect(m.length).toBeLessThanOrEqual(2_001);
    expect(m.endsWith("…")).toBe(true);
  });
});

describe("legStatusError (decode non-2xx, pd-reference 6)", () => {
  it.each([
    [400, "decode_bad_request", 400],
    [404, "decode_not_found", 404],
    [500, "decode_internal_error", 500],
    [502, "decode_bad_gateway", 502],
    [503, "decode_unavailable", 503],
    [429, "decode_error", 500],
    [504, "decode_error", 500],
    [422, "decode_error", 500],
  ])("decode %i -> %s (%i)", (status, code, out) => {
    expect(legStatusError("decode", status)).toEqual({ code, status: out });
  });
  it("aggregated engines get the engine_* twins", () => {
    expect(legStatusError("engine", 503)).toEqual({ code: "engine_unavailable", status: 503 });
    expect(legStatusError("engine", 418)).toEqual({ code: "engine_error", status: 500 });
  });
});

describe("passedThroughStatus (prefill non-2xx keeps the engine's status)", () => {
  it.each([[429, 429], [400, 400], [503, 503], [302, 502], [204, 502], [600, 502]])("%i -> %i", (s, out) => {
    expect(passedThroughStatus(s)).toBe(out);
  });
});

describe("openAiErrorType", () => {
  it.each([[400, "invalid_request_error"], [404, "invalid_request_error"], [413, "invalid_request_error"], [401, "authentication_error"], [429, "rate_limit_error"], [499, "client_cancelled"], [500, "server_error"], [503, "server_error"]])(
    "%i -> %s",
    (s, t) => expect(openAiErrorType(s)).toBe(t),
  );
});
