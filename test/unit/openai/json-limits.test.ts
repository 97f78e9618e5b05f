// Lone surrogates and deep nesting anywhere in an OpenAI body (issue 32): each a 400 naming
// the field, found before any engine work, on every engine kind. Written as the JSON text a
// client sends, since "\ud800" escapes are the only way a lone surrogate arrives.
import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { jsonLimitIssue } from "../../../src/api/json-limits.js";
import { parseOpenAiRequest } from "../../../src/api/openai/request.js";
import { MAX_JSON_DEPTH, parseLosslessJson } from "../../../src/tokenizer/lossless-json.js";

const nested = (levels: number, inner = "1") => "[".repeat(levels) + inner + "]".repeat(levels);
const check = (text: string) => jsonLimitIssue(text, JSON.parse(text));
const msgs = (content: string) => `{"model":"m","messages":[{"role":"user","content":${content}}]}`;

describe("jsonLimitIssue", () => {
  it.each([
    ["plain chat", undefined, msgs('"hi"')],
    ["a surrogate pair (an emoji) is text", undefined, msgs('"\\ud83d\\ude00"')],
    ["an escaped backslash before u is not an escape", undefined, msgs('"\\\\ud800"')],
    ["lone high surrogate in content", "messages[0].content", msgs('"hi \\ud800 there"')],
    ["lone low surrogate, upper-case escape", "messages[0].content", msgs('"\\uDC00"')],
    ["reversed pair", "messages[0].content", msgs('"\\ude00\\ud83d"')],
    ["in a content part", "messages[0].content[0].text", msgs('[{"type":"text","text":"\\udbff"}]')],
    ["in stop", "stop[1]", '{"model":"m","prompt":"x","stop":["ok","\\ud800"]}'],
    ["in the prompt", "prompt", '{"model":"m","prompt":"a \\ud800"}'],
    ["in a batched prompt", "prompt[1]", '{"model":"m","prompt":["a","\\ud800"]}'],
    ["in a key", "logit_bias", '{"model":"m","prompt":"x","logit_bias":{"\\ud800":1}}'],
    ["in an unknown top-level key", "body", '{"model":"m","prompt":"x","\\udfff":1}'],
    [`nested ${MAX_JSON_DEPTH} levels (the limit)`, undefined, `{"model":"m","prompt":"x","extra":${nested(MAX_JSON_DEPTH - 1)}}`],
    [`nested ${MAX_JSON_DEPTH + 1} levels`, "extra[0][0]", `{"model":"m","prompt":"x","extra":${nested(MAX_JSON_DEPTH)}}`],
    ["nested 200 000 levels", "extra[0][0]", `{"model":"m","prompt":"x","extra":${nested(200_000)}}`],
    ["deep inside a message", "messages[0].content", msgs(`[{"type":"text","text":"t","x":${nested(600, "{}")}}]`)],
    ["many brackets, none deep", undefined, `{"model":"m","prompt":"x","tools":[${Array.from({ length: 600 }, () => '{"a":[1]}').join(",")}]}`],
  ])("%s -> %s", (_name, param, text) => {
    expect(check(text)?.param).toBe(param);
  });

  it("the limit is the lossless reader's: what passes here, it reads; one level more, it refuses", () => {
    const atLimit = `{"a":${nested(MAX_JSON_DEPTH - 1)}}`;
    expect(check(atLimit)).toBeUndefined();
    expect(() => parseLosslessJson(atLimit)).not.toThrow();
    const over = `{"a":${nested(MAX_JSON_DEPTH)}}`;
    expect(check(over)).toBeDefined();
    expect(() => parseLosslessJson(over)).toThrow(/nesting too deep/);
  });

  it("parseOpenAiRequest answers each with a 400 naming the field", () => {
    for (const [text, param] of [[msgs('"\\ud800"'), "messages[0].content"], [`{"model":"m","prompt":"x","extra":${nested(MAX_JSON_DEPTH)}}`, "extra[0][0]"]] as const) {
      let err: unknown;
      try {
        parseOpenAiRequest(text.includes("messages") ? "/v1/chat/completions" : "/v1/completions", text, 16);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).status).toBe(400);
      expect((err as GatewayError).param).toBe(param);
      expect((err as GatewayError).message.startsWith(`${param}: `)).toBe(true);
    }
  });
});
