// vLLM's Anthropic Messages API on a sim engine, driven by the official `@anthropic-ai/sdk`:
// messages.create, messages.stream().finalMessage(), countTokens, the wire events, errors in
// vLLM's shapes, faults and cancellation, and the prompt shared with chat.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detokenize, naturalLength, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, parseNamedSse, postJson, resetAll, stats, waitFor } from "./helpers.js";

let c: RunningCluster;
let url: string;
let sdk: Anthropic;
const MODEL = "m-msg";
const PROMPT = "tell me a story about the sea";
const ids = tokenize(PROMPT);
const user = (content: string) => [{ role: "user" as const, content }];
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  c = await cluster([{ name: "a", role: "both", kvConnector: "none", model: MODEL, latency: FAST }]);
  url = c.engine("a").url;
  sdk = new Anthropic({ baseURL: url, apiKey: "x", maxRetries: 0 });
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

describe("messages.create", () => {
  it("vLLM's message: chat's id, max_tokens stop, usage, no null fields", async () => {
    const raw = await postJson(`${url}/v1/messages`, { model: MODEL, max_tokens: 4, messages: user(PROMPT) }, { "x-request-id": "m1" });
    expect(await raw.json()).toEqual({
      id: "chatcmpl-m1", type: "message", role: "assistant", content: [{ type: "text", text: detokenize(outputTokenIds(ids, undefined, 0, 4)) }],
      model: MODEL, stop_reason: "max_tokens", usage: { input_tokens: ids.length, output_tokens: 4 },
    });
    const msg = await sdk.messages.create({ model: MODEL, max_tokens: 40, messages: user(PROMPT) });
    const natural = naturalLength(ids, undefined, 0);
    expect(msg).toMatchObject({ stop_reason: "end_turn", usage: { output_tokens: natural }, content: [{ type: "text", text: detokenize(outputTokenIds(ids, undefined, 0, natural)) }] });
    const s = await stats(c.engine("a"));
    expect(s.generateRequests).toBe(2);
    expect(s.recent.at(-1)).toMatchObject({ surface: "openai", method: "/v1/messages", body: { max_tokens: 40 } });
  });

  it("a matched stop sequence is stop_reason stop_sequence, the text cut before it", async () => {
    // No ignore_eos on this API: pick a stop word from before the prompt's natural EOS.
    const natural = naturalLength(ids, undefined, 0);
    const toks = outputTokenIds(ids, undefined, 0, natural);
    const stop = detokenize([toks[3]!]).trim();
    const msg = await sdk.messages.create({ model: MODEL, max_tokens: 40, messages: user(PROMPT), stop_sequences: [stop] });
    expect(msg).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: stop });
    const text = (msg.content[0] as Anthropic.TextBlock).text;
    expect(text.includes(stop)).toBe(false);
    expect(detokenize(toks).startsWith(text)).toBe(true);
  });

  it("system, text blocks, tool_use and tool_result render as the equivalent chat request's prompt", async () => {
    const chat = (await (await postJson(`${url}/v1/chat/completions`, {
      model: MODEL, max_tokens: 6, messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hi" }, { type: "text", text: "there" }] }],
    })).json()) as Json;
    const msg = await sdk.messages.create({
      model: MODEL, max_tokens: 6, system: [{ type: "text", text: "be brief" }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }, { type: "text", text: "there" }] }],
    });
    expect(msg.usage.input_tokens).toBe(chat.usage.prompt_tokens);
    expect((msg.content[0] as Anthropic.TextBlock).text).toBe(chat.choices[0].message.content);
    // user, assistant tool_use (no content), a tool message for the result; the user message
    // holding only a tool_result is dropped, as vLLM converts it.
    const withTools = await sdk.messages.countTokens({
      model: MODEL,
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "get_weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "sunny" }] },
      ],
      tools: [{ name: "get_weather", input_schema: { type: "object" } }],
    });
    expect(withTools.input_tokens).toBe(tokenize("weather?\n\nsunny").length);
  });

  it("countTokens: the rendered prompt's length, as generation counts it", async () => {
    const n = await sdk.messages.countTokens({ model: MODEL, system: "be brief", messages: user(PROMPT) });
    const msg = await sdk.messages.create({ model: MODEL, max_tokens: 1, system: "be brief", messages: user(PROMPT) });
    expect(n.input_tokens).toBe(tokenize(`be brief\n${PROMPT}`).length);
    expect(msg.usage.input_tokens).toBe(n.input_tokens);
    const raw = (await (await postJson(`${url}/v1/messages/count_tokens`, { model: MODEL, messages: user("a b c") })).json()) as Json;
    expect(raw).toEqual({ input_tokens: 3, context_management: { original_input_tokens: 3 } });
    const s = await stats(c.engine("a"));
    expect(s.generateRequests).toBe(1); // count_tokens is recorded, not counted as a generation
    expect(s.recent.filter((r) => r.method === "/v1/messages/count_tokens")).toHaveLength(2);
  });
});

describe("streaming", () => {
  it("messages.stream().finalMessage() assembles vLLM's events", async () => {
    const stream = sdk.messages.stream({ model: MODEL, max_tokens: 5, messages: user(PROMPT) });
    const texts: string[] = [];
    stream.on("text", (t) => texts.push(t));
    const final = await stream.finalMessage();
    const text = detokenize(outputTokenIds(ids, undefined, 0, 5));
    expect(final).toMatchObject({ type: "message", role: "assistant", stop_reason: "max_tokens", content: [{ type: "text", text }], usage: { input_tokens: ids.length, output_tokens: 5 } });
    expect(texts.join("")).toBe(text);
  });

  it("the wire: `event:` lines, message_start … message_stop, no ping", async () => {
    const r = await postJson(`${url}/v1/messages`, { model: MODEL, max_tokens: 3, messages: user(PROMPT), stream: true }, { "x-request-id": "s1" });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const events = parseNamedSse(await r.text());
    expect(events.map((e) => e.event)).toEqual([
      "message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
    ]);
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events[0]!.data.message).toEqual({ id: "chatcmpl-s1", type: "message", role: "assistant", content: [], model: MODEL, stop_reason: null, stop_sequence: null, usage: { input_tokens: ids.length, output_tokens: 0 } });
    expect(events[1]!.data).toEqual({ type: "content_block_start", content_block: { type: "text", text: "" }, index: 0 });
    expect(events[6]!.data).toEqual({ type: "message_delta", delta: { stop_reason: "max_tokens" }, usage: { input_tokens: ids.length, output_tokens: 3 } });
  });

  it("a mid-stream failure is an `error` event (internal_error) the SDK raises, without message_stop", async () => {
    const fault = { "x-sim-fault": JSON.stringify({ failMidStream: { afterTokens: 2, code: "internal", message: "boom" } }) };
    const r = await postJson(`${url}/v1/messages`, { model: MODEL, max_tokens: 8, messages: user(PROMPT), stream: true }, fault);
    const events = parseNamedSse(await r.text());
    expect(events.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "internal_error", message: "boom" } } });
    expect(events.map((e) => e.event)).not.toContain("message_stop");
    const stream = sdk.messages.stream({ model: MODEL, max_tokens: 8, messages: user(PROMPT) }, { headers: fault });
    await expect(stream.finalMessage()).rejects.toThrow(/boom/);
  });

  it("a client disconnect stops generation and counts streamsCancelled", async () => {
    const ctrl = new AbortController();
    // eosAfter keeps the request running: the Messages API has no ignore_eos.
    const r = await fetch(`${url}/v1/messages`, {
      method: "POST", signal: ctrl.signal, headers: { "content-type": "application/json", "x-sim-fault": '{"eosAfter":30000}' },
      body: JSON.stringify({ model: MODEL, max_tokens: 30_000, messages: user(PROMPT), stream: true }),
    });
    await r.body!.getReader().read();
    ctrl.abort();
    await waitFor(async () => (await stats(c.engine("a"))).streamsCancelled === 1);
    expect((await stats(c.engine("a"))).activeRequests).toBe(0);
  });
});

describe("errors", () => {
  const errOf = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as InstanceType<typeof Anthropic.APIError>);

  it("an unknown model is a 404 in Anthropic's envelope with vLLM's error type", async () => {
    const e = await errOf(sdk.messages.create({ model: "nope", max_tokens: 4, messages: user("x") }));
    expect(e?.status).toBe(404);
    expect(e?.error).toEqual({ type: "error", error: { type: "NotFoundError", message: "The model `nope` does not exist." } });
    const count = await errOf(sdk.messages.countTokens({ model: "nope", messages: user("x") }));
    expect(count?.status).toBe(404);
  });

  it("schema errors (pydantic) are 400s in vLLM's OpenAI error shape, naming the field", async () => {
    for (const [body, param] of [
      [{ model: MODEL, messages: user("x") }, "max_tokens"],
      [{ model: MODEL, messages: user("x"), max_tokens: 0 }, "max_tokens"],
      [{ model: MODEL, messages: [{ role: "robot", content: "x" }], max_tokens: 4 }, "messages[0].role"],
      [{ model: MODEL, messages: [{ role: "user", content: [{ type: "video" }] }], max_tokens: 4 }, "messages[0].content[0].type"],
      [{ model: MODEL, messages: user("x"), max_tokens: 4, kv_transfer_params: "yes" }, "kv_transfer_params"],
      [{ model: MODEL, messages: user("x"), max_tokens: 4, tool_choice: { type: "tool" } }, "tool_choice.name"],
    ] as const) {
      const r = await postJson(`${url}/v1/messages`, body);
      expect(r.status).toBe(400);
      expect(((await r.json()) as Json).error).toMatchObject({ type: "BadRequestError", param, code: 400 });
    }
  });

  it("the context window: a 400 in Anthropic's envelope", async () => {
    // (The SDK refuses a non-streamed max_tokens this large itself, so the prompt fills the window.)
    const e = await errOf(sdk.messages.create({ model: MODEL, max_tokens: 100, messages: user("w ".repeat(32_700)) }));
    expect(e?.status).toBe(400);
    expect(e?.error).toMatchObject({ type: "error", error: { type: "BadRequestError", message: expect.stringContaining("max_tokens") } });
  });

  it("failStart: the mapped status, in Anthropic's envelope", async () => {
    const e = await errOf(sdk.messages.create({ model: MODEL, max_tokens: 4, messages: user(PROMPT) }, { headers: { "x-sim-fault": '{"failStart":{"code":"unavailable","message":"warming"}}' } }));
    expect(e?.status).toBe(503);
    expect(e?.error).toEqual({ type: "error", error: { type: "ServiceUnavailableError", message: "warming" } });
  });
});
