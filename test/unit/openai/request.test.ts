import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { paramOf, parseOpenAiRequest } from "../../../src/api/openai/request.js";
import { readBodyText } from "../../../src/core/body-text.js";

const CHAT = "/v1/chat/completions" as const;
const COMP = "/v1/completions" as const;
const chat = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra });
const comp = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: "m", prompt: "hi", ...extra });

function failure(f: () => unknown): GatewayError {
  try {
    f();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a GatewayError");
}

describe("parseOpenAiRequest: each mistake is its own 400 naming the field", () => {
  it.each([
    ["empty body", CHAT, "", null, "invalid_json"],
    ["malformed JSON", CHAT, "{\"model\":", null, "invalid_json"],
    ["not an object", CHAT, "[1,2]", null, "invalid_request"],
    ["null body", CHAT, "null", null, "invalid_request"],
    ["model missing", CHAT, JSON.stringify({ messages: [{ role: "user", content: "x" }] }), "model", "invalid_request"],
    ["model wrong type", CHAT, chat({ model: 7 }), "model", "invalid_request"],
    ["model empty", CHAT, chat({ model: "" }), "model", "invalid_request"],
    ["messages missing", CHAT, JSON.stringify({ model: "m" }), "messages", "invalid_request"],
    ["messages empty", CHAT, chat({ messages: [] }), "messages", "invalid_request"],
    ["message role wrong type", CHAT, chat({ messages: [{ role: 1, content: "x" }] }), "messages[0].role", "invalid_request"],
    ["message content wrong type", CHAT, chat({ messages: [{ role: "user", content: 5 }] }), "messages[0].content", "invalid_request"],
    ["n = 0", CHAT, chat({ n: 0 }), "n", "invalid_request"],
    ["n above max_n", CHAT, chat({ n: 17 }), "n", "invalid_request"],
    ["n not an integer", CHAT, chat({ n: 1.5 }), "n", "invalid_request"],
    ["n a string", CHAT, chat({ n: "2" }), "n", "invalid_request"],
    ["stream a string", CHAT, chat({ stream: "yes" }), "stream", "invalid_request"],
    ["stream_options.include_usage wrong type", CHAT, chat({ stream: true, stream_options: { include_usage: "y" } }), "stream_options.include_usage", "invalid_request"],
    ["stream_options without stream", CHAT, chat({ stream_options: { include_usage: true } }), "stream_options", "invalid_request"],
    ["max_tokens 0", CHAT, chat({ max_tokens: 0 }), "max_tokens", "invalid_request"],
    ["max_completion_tokens wrong type", CHAT, chat({ max_completion_tokens: "64" }), "max_completion_tokens", "invalid_request"],
    ["stop wrong type", CHAT, chat({ stop: 3 }), "stop", "invalid_request"],
    ["stop list of non-strings", CHAT, chat({ stop: ["a", 1] }), "stop", "invalid_request"],
    ["seed not an integer", CHAT, chat({ seed: 0.5 }), "seed", "invalid_request"],
    ["temperature a string", CHAT, chat({ temperature: "hot" }), "temperature", "invalid_request"],
    ["chat logprobs must be a boolean", CHAT, chat({ logprobs: 5 }), "logprobs", "invalid_request"],
    ["prompt missing", COMP, JSON.stringify({ model: "m" }), "prompt", "invalid_request"],
    ["prompt wrong type", COMP, comp({ prompt: 5 }), "prompt", "invalid_request"],
    ["prompt empty list", COMP, comp({ prompt: [] }), "prompt", "invalid_request"],
    ["completions logprobs must be an integer", COMP, comp({ logprobs: true }), "logprobs", "invalid_request"],
  ])("%s", (_name, route, text, param, code) => {
    const e = failure(() => parseOpenAiRequest(route, text, 16));
    expect(e.status).toBe(400);
    expect(e.code).toBe(code);
    expect(e.param ?? null).toBe(param);
    if (param) expect(e.message.startsWith(`${param}:`)).toBe(true);
  });

  it("accepts what the OpenAI SDK sends, nulls included, and keeps unknown fields", () => {
    const text = chat({ n: 3, stream: true, stream_options: { include_usage: true }, max_completion_tokens: 8, stop: null, seed: 2 ** 63, logprobs: true, top_logprobs: 2, tools: [{ type: "function" }], vendor_x: { y: 1 } });
    const r = parseOpenAiRequest(CHAT, text, 16);
    expect(r).toMatchObject({ route: CHAT, model: "m", stream: true, text });
    expect(r.body.vendor_x).toEqual({ y: 1 });
    expect(r.body.tools).toEqual([{ type: "function" }]);
  });
  it.each([["a string", "hi"], ["strings", ["a", "b"]], ["token ids", [1, 2]], ["token-id lists", [[1], [2, 3]]]])("completions prompt as %s", (_n, prompt) => {
    expect(parseOpenAiRequest(COMP, comp({ prompt }), 16).body.prompt).toEqual(prompt);
  });
  it("n = max_n is allowed", () => {
    expect(parseOpenAiRequest(CHAT, chat({ n: 4 }), 4).body.n).toBe(4);
  });
});

describe("paramOf", () => {
  it.each([[["n"], "n"], [["messages", 0, "role"], "messages[0].role"], [["stream_options", "include_usage"], "stream_options.include_usage"], [[], ""]])("%j -> %s", (path, out) => {
    expect(paramOf(path)).toBe(out);
  });
});

describe("readBodyText: the size limit counts content-length and the bytes actually read", () => {
  const req = (body: BodyInit, headers: Record<string, string> = {}) => new Request("http://x/", { method: "POST", body, headers, duplex: "half" } as RequestInit);
  it("reads a body under the limit", async () => {
    expect(await readBodyText(req("hello"), 10)).toBe("hello");
  });
  it("refuses a declared content-length over the limit before reading", async () => {
    await expect(readBodyText(req("x", { "content-length": "11" }), 10)).rejects.toMatchObject({ code: "body_too_large", status: 413 });
  });
  it("refuses more bytes than the limit even without content-length", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(6));
        c.enqueue(new Uint8Array(6));
        c.close();
      },
    });
    await expect(readBodyText(req(stream), 10)).rejects.toMatchObject({ code: "body_too_large", status: 413 });
  });
  it("refuses invalid UTF-8", async () => {
    await expect(readBodyText(req(new Uint8Array([0x7b, 0xff, 0x7d])), 10)).rejects.toMatchObject({ code: "invalid_json", status: 400 });
  });
});

describe("fan-out width against max_n (prompts x n)", () => {
  it("a batch of prompts times n above max_n is a 400 naming n, before any engine work", () => {
    const text = JSON.stringify({ model: "m", prompt: Array.from({ length: 2_000 }, (_, i) => `p${i}`), n: 16 });
    expect(() => parseOpenAiRequest("/v1/completions", text, 16)).toThrow(/n: 2000 prompts x n=16 asks for 32000 sequences, above the limit of 16/);
    const ok = JSON.stringify({ model: "m", prompt: ["a", "b"], n: 8 });
    expect(parseOpenAiRequest("/v1/completions", ok, 16).model).toBe("m");
  });
});

describe("a refused body leaves no locked stream behind (the next request must be served)", () => {
  it("413 on a chunked body over the limit, and the stream is released", async () => {
    const chunk = new Uint8Array(1024).fill(32);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < 100) c.enqueue(chunk);
        else c.close();
      },
    });
    const req = new Request("http://gateway.test/v1/completions", { method: "POST", body, duplex: "half" } as RequestInit);
    await expect(readBodyText(req, 4 * 1024)).rejects.toMatchObject({ code: "body_too_large", status: 413 });
    expect(req.body!.locked).toBe(false);
  });
});
