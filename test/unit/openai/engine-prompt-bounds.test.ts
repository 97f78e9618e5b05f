// The prompt bounds on the OpenAI surface for models the gateway tokenizes: a prompt larger
// than any that fits the context is refused with 400 context_length_exceeded naming its field
// (prompt / messages) BEFORE any tokenizing; one that is tokenized is stopped at the context
// length; a run too long to merge is a 400 too.
import { describe, expect, it } from "vitest";
import { chatPrompt, completionPrompt } from "../../../src/api/openai/engine-prompt.js";
import type { OpenAiRequest } from "../../../src/api/openai/request.js";
import type { ModelTokenizer } from "../../../src/backends/tokenizer-bundles.js";
import { GatewayError } from "../../../src/core/errors.js";
import { compileChatTemplate } from "../../../src/tokenizer/chat-template.js";
import { selectChatTemplate } from "../../../src/tokenizer/template-source.js";
import { qwen3Bundle, qwen3Tokenizer } from "../tokenizer/qwen3-files.js";

function request(route: OpenAiRequest["route"], body: Record<string, unknown>): OpenAiRequest {
  const text = JSON.stringify(body);
  return { route, text, body, model: "Qwen/Qwen3-0.6B", stream: false };
}

/** The real Qwen3 tokenizer and template, with a counter on every tokenizing call. */
async function qwen3(maxContextLength: number | undefined) {
  const tokenizer = await qwen3Tokenizer();
  const calls = { encode: 0 };
  const counted = {
    ...tokenizer,
    encode: (...a: Parameters<typeof tokenizer.encode>) => (calls.encode++, tokenizer.encode(...a)),
    encodeWithin: (...a: Parameters<typeof tokenizer.encodeWithin>) => (calls.encode++, tokenizer.encodeWithin(...a)),
  };
  const bundle = await qwen3Bundle();
  const tok: ModelTokenizer = {
    model: "Qwen/Qwen3-0.6B",
    sha256: "x",
    source: "test",
    tokenizer: counted,
    maxContextLength,
    modelType: "qwen3",
    chatTemplate: (choice) => compileChatTemplate(selectChatTemplate(bundle.files, choice)),
  } satisfies ModelTokenizer;
  return { tok, calls };
}

async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

describe("the prompt byte bound (before tokenizing)", () => {
  it("completions: a prompt over the bound is 400 context_length_exceeded naming prompt, and nothing is tokenized", async () => {
    // Context 100: no prompt of more than 100 * 128 * 3 = 38400 bytes fits.
    const { tok, calls } = await qwen3(100);
    const e = await refusal(completionPrompt(request("/v1/completions", { model: "m", prompt: "x".repeat(38_401) }), tok));
    expect([e.status, e.code, e.param]).toEqual([400, "context_length_exceeded", "prompt"]);
    expect(e.message).toBe("The prompt is 38401 bytes (UTF-8); no prompt of more than 38400 bytes fits this model's maximum context length of 100 tokens");
    expect(calls.encode).toBe(0);
  });

  it("chat: the rendered chat over the bound is refused naming messages, and nothing is tokenized", async () => {
    const { tok, calls } = await qwen3(100);
    const e = await refusal(chatPrompt(request("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "y".repeat(40_000) }] }), tok));
    expect([e.status, e.code, e.param]).toEqual([400, "context_length_exceeded", "messages"]);
    expect(calls.encode).toBe(0);
  });

  it("the operator's max_prompt_bytes lowers the bound", async () => {
    const { tok, calls } = await qwen3(40_960);
    const e = await refusal(completionPrompt(request("/v1/completions", { model: "m", prompt: "é".repeat(600) }), tok, { maxPromptBytes: 1_000 }));
    expect([e.code, e.param]).toEqual(["context_length_exceeded", "prompt"]);
    expect(e.message).toContain("1200 bytes");
    expect(calls.encode).toBe(0);
  });

  it("a prompt at the bound is tokenized (then stopped at the context length)", async () => {
    const { tok, calls } = await qwen3(100);
    const e = await refusal(completionPrompt(request("/v1/completions", { model: "m", prompt: "word ".repeat(7_680) }), tok));
    expect(calls.encode).toBe(1);
    expect([e.status, e.code, e.param]).toEqual([400, "context_length_exceeded", "prompt"]);
    expect(e.message).toBe("This model's maximum context length is 100 tokens, and the prompt has at least 100 tokens (tokenizing stopped there), leaving no room for output");
  });
});

describe("tokenizing stops at the context length", () => {
  it("chat: a long conversation is refused naming messages", async () => {
    const { tok } = await qwen3(2_000);
    const e = await refusal(chatPrompt(request("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hello there ".repeat(5_000) }] }), tok));
    expect([e.code, e.param]).toEqual(["context_length_exceeded", "messages"]);
  });

  it("a prompt that fits comes back with its ids (BOS rule of the tokenizer)", async () => {
    const { tok } = await qwen3(2_000);
    const p = await completionPrompt(request("/v1/completions", { model: "m", prompt: "Hello world" }), tok);
    expect(p.ids).toEqual((await qwen3Tokenizer()).encode("Hello world"));
  });

  it("a run too long to merge is 400 prompt_run_too_long naming prompt", async () => {
    const { tok } = await qwen3(40_960);
    const e = await refusal(completionPrompt(request("/v1/completions", { model: "m", prompt: " ".repeat((1 << 20) + 1) }), tok));
    expect([e.status, e.code, e.param]).toEqual([400, "prompt_run_too_long", "prompt"]);
  });
});
