// The vLLM OpenAI HTTP API on the engine port: shapes, streaming, n, usage, errors, and
// kv_transfer_params in and out (the HTTP PD path).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detokenize, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, parseSse, postJson, resetAll, stats, waitFor } from "./helpers.js";

let c: RunningCluster;
let p: string;
let d: string;
const PROMPT = "tell me a story about the sea";
const ids = tokenize(PROMPT);
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  c = await cluster([
    { name: "hp", role: "prefill", kvConnector: "NixlConnector", model: "m-http", latency: FAST },
    { name: "hd", role: "decode", kvConnector: "NixlConnector", model: "m-http", latency: { ...FAST, perOutputTokenMs: 5 } },
  ]);
  p = c.engine("hp").url;
  d = c.engine("hd").url;
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

describe("non-streaming", () => {
  it("completions: vLLM's response shape with deterministic text and usage", async () => {
    const r = await postJson(`${p}/v1/completions`, { model: "m-http", prompt: PROMPT, max_tokens: 5, seed: 9, logprobs: 2 }, { "x-request-id": "abc" });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Json;
    expect(body).toEqual({
      id: "cmpl-abc", object: "text_completion", created: expect.any(Number), model: "m-http",
      choices: [{ index: 0, text: detokenize(outputTokenIds(ids, 9, 0, 5)), logprobs: expect.objectContaining({ tokens: expect.any(Array) }), finish_reason: "length", stop_reason: null }],
      usage: { prompt_tokens: ids.length, completion_tokens: 5, total_tokens: ids.length + 5 },
      kv_transfer_params: null,
    });
    const s = await stats(c.engine("hp"));
    expect(s.recent.at(-1)).toMatchObject({ surface: "openai", method: "/v1/completions", protocol: "http", requestId: "abc", body: { prompt: PROMPT } });
  });

  it("chat: message content, max_completion_tokens, n choices", async () => {
    const r = await postJson(`${p}/v1/chat/completions`, {
      model: "m-http", messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hi" }] }],
      max_completion_tokens: 3, n: 2,
    });
    const body = (await r.json()) as Json;
    const promptIds = tokenize("be brief\nhi");
    expect(body.object).toBe("chat.completion");
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.choices).toEqual([0, 1].map((i) => ({
      index: i, message: { role: "assistant", content: detokenize(outputTokenIds(promptIds, undefined, i, 3)) }, logprobs: null, finish_reason: "length", stop_reason: null,
    })));
    expect(body.usage).toEqual({ prompt_tokens: promptIds.length, completion_tokens: 6, total_tokens: promptIds.length + 6 });
  });

  it("accepts token-id and batched prompts; choice index = prompt * n + sample", async () => {
    const r = await postJson(`${p}/v1/completions`, { prompt: [ids, tokenize("second")], max_tokens: 2, n: 2 });
    const body = (await r.json()) as Json;
    expect(body.choices.map((ch: Json) => ch.index)).toEqual([0, 1, 2, 3]);
    expect(body.choices[3].text).toBe(detokenize(outputTokenIds(tokenize("second"), undefined, 1, 2)));
    expect(body.usage.prompt_tokens).toBe(ids.length + 1);
  });

  it("truncates text before a matched stop string", async () => {
    const toks = outputTokenIds(ids, undefined, 0, 10);
    const stop = detokenize([toks[4]!]).trim();
    const body = (await (await postJson(`${p}/v1/completions`, { prompt: PROMPT, max_tokens: 10, ignore_eos: true, stop })).json()) as Json;
    expect(body.choices[0].finish_reason).toBe("stop");
    expect(body.choices[0].stop_reason).toBe(stop);
    expect(body.choices[0].text.includes(stop)).toBe(false);
    expect(detokenize(toks).startsWith(body.choices[0].text)).toBe(true);
  });
});

describe("streaming", () => {
  it("completions: one chunk per token, finish_reason on the last, usage chunk, [DONE]", async () => {
    const r = await postJson(`${p}/v1/completions`, { prompt: PROMPT, max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const events = parseSse(await r.text());
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1) as Json[];
    expect(chunks).toHaveLength(5);
    const expected = outputTokenIds(ids, undefined, 0, 4).map((t) => detokenize([t]));
    expect(chunks.slice(0, 4).map((ch) => ch.choices[0].text)).toEqual(expected);
    expect(chunks.slice(0, 4).map((ch) => ch.choices[0].finish_reason)).toEqual([null, null, null, "length"]);
    expect(chunks[0]).toMatchObject({ object: "text_completion", model: "m-http", choices: [{ index: 0, logprobs: null }] });
    expect(chunks[4]).toMatchObject({ choices: [], usage: { prompt_tokens: ids.length, completion_tokens: 4, total_tokens: ids.length + 4 } });
  });

  it("chat: a role chunk per index first, content deltas, finish per index, no usage unless asked", async () => {
    const r = await postJson(`${p}/v1/chat/completions`, { messages: [{ role: "user", content: PROMPT }], max_tokens: 2, n: 2, stream: true });
    const events = parseSse(await r.text());
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1) as Json[];
    expect(chunks.every((ch) => ch.object === "chat.completion.chunk" && ch.choices.length === 1)).toBe(true);
    for (const i of [0, 1]) {
      const mine = chunks.filter((ch) => ch.choices[0].index === i).map((ch) => ch.choices[0]);
      expect(mine[0].delta).toEqual({ role: "assistant", content: "" });
      expect(mine.slice(1).map((x) => x.delta.content).join("")).toBe(detokenize(outputTokenIds(ids, undefined, i, 2)));
      expect(mine.at(-1).finish_reason).toBe("length");
      expect(mine.filter((x) => x.finish_reason !== null)).toHaveLength(1);
    }
    expect(chunks.some((ch) => "usage" in ch)).toBe(false);
  });

  it("a client disconnect stops generation and counts streamsCancelled", async () => {
    const ctrl = new AbortController();
    const r = await fetch(`${d}/v1/completions`, {
      method: "POST", signal: ctrl.signal, headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: PROMPT, max_tokens: 30_000, ignore_eos: true, stream: true }),
    });
    const reader = r.body!.getReader();
    await reader.read();
    ctrl.abort();
    await waitFor(async () => (await stats(c.engine("hd"))).streamsCancelled === 1);
    expect((await stats(c.engine("hd"))).activeRequests).toBe(0);
  });
});

describe("kv_transfer_params (HTTP PD)", () => {
  it("a length-capped prefill returns the handoff; the decode pulls it instead of computing", async () => {
    const pre = (await (await postJson(`${p}/v1/completions`, {
      model: "m-http", prompt: PROMPT, max_tokens: 1, stream: false, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
    }, { "x-request-id": "pd-1" })).json()) as Json;
    expect(pre.kv_transfer_params).toMatchObject({
      do_remote_prefill: true, do_remote_decode: false, remote_request_id: "pd-1", remote_engine_id: "hp",
      remote_host: "127.0.0.1", remote_port: c.engine("hp").spec.port, tp_size: 1,
    });
    const dec = await postJson(`${d}/v1/completions`, { model: "m-http", prompt: PROMPT, max_tokens: 3, kv_transfer_params: pre.kv_transfer_params }, { "x-request-id": "pd-1" });
    expect(((await dec.json()) as Json).choices[0].text).toBe(detokenize(outputTokenIds(ids, undefined, 0, 3)));
    expect(await stats(c.engine("hp"))).toMatchObject({ kvPullsServed: 1, blocksPinned: 0 });
    expect(await stats(c.engine("hd"))).toMatchObject({ promptTokensComputed: 0, kvPullsCompleted: 1 });
  });
});

describe("errors and other routes", () => {
  it("404 for an unknown model, in vLLM's error shape", async () => {
    const r = await postJson(`${p}/v1/completions`, { model: "nope", prompt: "x" });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ error: { message: "The model `nope` does not exist.", type: "NotFoundError", param: "model", code: 404 } });
  });

  it("400 for malformed JSON and wrong types, naming the field", async () => {
    const bad = await fetch(`${p}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{oops" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error).toMatchObject({ type: "BadRequestError", code: 400 });
    const wrong = await postJson(`${p}/v1/completions`, { prompt: "x", n: "two" });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as Json).error).toMatchObject({ param: "n" });
    const kv = await postJson(`${p}/v1/completions`, { prompt: "x", kv_transfer_params: "yes" });
    expect(((await kv.json()) as Json).error.param).toBe("kv_transfer_params");
    const msgs = await postJson(`${p}/v1/chat/completions`, { messages: [] });
    expect(((await msgs.json()) as Json).error.param).toBe("messages");
  });

  it("GET /v1/models and /health", async () => {
    const models = (await (await fetch(`${p}/v1/models`)).json()) as Json;
    expect(models).toEqual({ object: "list", data: [{ id: "m-http", object: "model", created: expect.any(Number), owned_by: "vllm", root: "m-http", max_model_len: 32768 }] });
    const h = await fetch(`${p}/health`);
    expect(h.status).toBe(200);
    expect(await h.text()).toBe("");
    expect((await fetch(`${p}/nope`)).status).toBe(404);
  });
});
