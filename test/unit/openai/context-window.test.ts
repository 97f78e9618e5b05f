// The context-window check for requests the gateway tokenizes, as a table.
import { describe, expect, it } from "vitest";
import { contextWindowError, maxTokensField, outputCapError } from "../../../src/api/context-window.js";

describe("contextWindowError", () => {
  it.each([
    // promptTokens, maxTokens, maxContextLength, expected param (undefined = fits)
    [10, 20, 100, undefined],
    [10, 90, 100, undefined],
    [10, 91, 100, "max_tokens"],
    [99, undefined, 100, undefined],
    [99, 1, 100, undefined],
    [100, undefined, 100, "messages"],
    [150, 1, 100, "messages"],
    [150, 1, undefined, undefined], // unknown context: the engine checks
  ] as const)("prompt %i + max %s in %s -> %s", (promptTokens, maxTokens, maxContextLength, param) => {
    const e = contextWindowError({ promptTokens, maxTokens, maxField: "max_tokens", promptField: "messages", maxContextLength });
    expect(e?.param).toBe(param);
    if (e) {
      expect(e.status).toBe(400);
      expect(e.code).toBe("context_length_exceeded");
      expect(e.message).toContain(`${maxContextLength} tokens`);
      expect(e.message).toContain(`${promptTokens} tokens`);
    }
  });

  it("names both numbers and the field that asked for too much", () => {
    const e = contextWindowError({ promptTokens: 12, maxTokens: 40_960, maxField: "max_completion_tokens", promptField: "messages", maxContextLength: 40_960 });
    expect(e!.message).toBe("This model's maximum context length is 40960 tokens; the messages has 12 tokens and max_completion_tokens asks for 40960 (40972 in all)");
  });
});

describe("outputCapError (a prompt of unknown length, at least one token)", () => {
  it.each([
    [100, 100, "refused"],
    [101, 100, "refused"],
    [99, 100, "passed"], // room for a 1-token prompt: the engine decides
    [undefined, 100, "passed"],
    [5_000, undefined, "passed"], // unknown context
  ] as const)("max %s against a context of %s -> %s", (maxTokens, maxContextLength, verdict) => {
    const e = outputCapError({ maxTokens, maxField: "max_tokens", maxContextLength });
    expect(e === undefined ? "passed" : "refused").toBe(verdict);
    if (e) expect(e).toMatchObject({ status: 400, code: "context_length_exceeded", param: "max_tokens" });
  });
});

describe("maxTokensField", () => {
  it.each([
    [true, { max_completion_tokens: 5, max_tokens: 9 }, "max_completion_tokens", 5],
    [true, { max_tokens: 9 }, "max_tokens", 9],
    [true, { max_completion_tokens: null, max_tokens: 9 }, "max_tokens", 9],
    [false, { max_completion_tokens: 5, max_tokens: 9 }, "max_tokens", 9],
    [false, {}, "max_tokens", undefined],
  ] as const)("chat=%s %j -> %s", (chat, body, field, value) => {
    expect(maxTokensField(chat, body)).toEqual({ field, value });
  });
});
