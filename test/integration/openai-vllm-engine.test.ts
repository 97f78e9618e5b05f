// The OpenAI surface over VllmEngine engines (ARCHITECTURE decision 12): the gateway fetches
// the engine's tokenizer bundle (GetTokenizer), renders and encodes the prompt, runs the one
// pipeline (prefill for n=1 with the handoff relayed, skipped for n=3) and detokenizes the
// frames into OpenAI JSON / SSE. Against sim engines serving the real Qwen3 tokenizer, through
// the official openai SDK.
import { tokenizersOf } from "../../src/api/openai/engine-generation.js";
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived, expectNoPinnedBlocks } from "../support/pd-fixtures.js";
import { parseConfig } from "../../src/config/load.js";
import type { EngineSpec } from "../../sim/types.js";

const MODEL = "Qwen/Qwen3-0.6B";
const CONTEXT = 40_960;

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

function specs(model = MODEL): EngineSpec[] {
  return [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model, port: 0, latency: FAST },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model, port: 0, latency: FAST },
  ];
}

function config(c: TestCluster, model = MODEL) {
  return {
    models: {
      [model]: {
        prefill: [{ name: "prefill", url: c.url("prefill"), transport: "connect" }],
        decode: [{ name: "decode", url: c.url("decode"), transport: "grpc-web" }],
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  };
}

async function start(model = MODEL): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: specs(model) });
  return testGateway(config(cluster, model));
}

function sdk(gw: TestGateway, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0, defaultHeaders: headers });
}

/** The model's tokenizer as the gateway's isolate holds it (loaded by an earlier request). */
function gatewayTokenizer(gw: TestGateway, model = MODEL) {
  const pools = parseConfig(JSON.stringify(config(cluster!, model))).models[model]!;
  return tokenizersOf(gw.isolate).get({ model, engines: [...pools.decode, ...pools.prefill], waitUntil: () => {} });
}

/** Prefill ran once, length-capped, on the same ids decode got, and decode pulled its handoff. */
async function expectPrefillRelayed(c: TestCluster) {
  const [p] = await generatesReceived(c, "prefill");
  const [d] = await generatesReceived(c, "decode");
  expect(await generatesReceived(c, "prefill")).toHaveLength(1);
  expect(p!.request_id).toBe(d!.request_id);
  expect((p!.sampling_params as Record<string, unknown>).max_tokens).toBe(1);
  const ids = (p!.tokenized as { input_ids: number[] }).input_ids;
  expect(ids.length).toBeGreaterThan(0);
  expect((d!.tokenized as { input_ids: number[] }).input_ids).toEqual(ids);
  const handoff = JSON.parse(d!.kv_transfer_params_json as string) as Record<string, unknown>;
  expect(handoff).toMatchObject({ do_remote_prefill: true, remote_engine_id: "prefill-eng" });
  expect((await c.stats("prefill")).kvPullsServed).toBe(1);
  expect((await c.stats("decode")).promptTokensComputed).toBe(0);
  return { ids, decode: d! };
}

async function expectPrefillSkipped(c: TestCluster) {
  expect((await c.stats("prefill")).generateRequests).toBe(0);
  const [d] = await generatesReceived(c, "decode");
  expect(d!.kv_transfer_params_json).toBeUndefined();
  return d!;
}

const SAY = "Hello from the edge tokenizer.";

describe("chat completions", () => {
  it("n=1, not streamed: the template rendered and encoded, prefill ran, handoff relayed, text detokenized", async () => {
    const gw = await start();
    const { data, response } = await sdk(gw, { "x-request-id": "qchat-1" })
      .chat.completions.create({ model: MODEL, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: `<sim-say>${SAY}</sim-say>` }], max_tokens: 7, ignore_eos: true } as never)
      .withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(response.headers.get("x-request-id")).toBe("qchat-1");
    expect(data.object).toBe("chat.completion");
    expect(data.id).toBe("chatcmpl-qchat-1");
    expect(data.choices).toHaveLength(1);
    const tok = await gatewayTokenizer(gw);
    const sayIds = tok.tokenizer.encode(SAY, { addSpecialTokens: false });
    expect(data.choices[0]!.message.content).toBe(tok.tokenizer.decode([...sayIds, ...sayIds].slice(0, 7)));
    expect(data.choices[0]!.finish_reason).toBe("length");
    const { ids } = await expectPrefillRelayed(cluster!);
    // The Qwen3 template, as transformers renders it.
    expect(tok.tokenizer.decode(ids)).toBe(`<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n<sim-say>${SAY}</sim-say><|im_end|>\n<|im_start|>assistant\n`);
    expect(data.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 7, total_tokens: ids.length + 7 });
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);
    const [req] = gw.metrics.ofType("request");
    expect(req).toMatchObject({ surface: "openai", endpoint: "/v1/chat/completions", backend: "pd", status: 200 });
  });

  it("n=1, streamed with include_usage: role first, deltas concatenate to the text, usage chunk, [DONE]", async () => {
    const gw = await start();
    const { data: stream, response } = await sdk(gw)
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: `<sim-say>${SAY}</sim-say>` }], max_tokens: 5, ignore_eos: true, stream: true, stream_options: { include_usage: true } } as never)
      .withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const chunks = [];
    for await (const c of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? "")).join("");
    const tok = await gatewayTokenizer(gw);
    expect(text).toBe(tok.tokenizer.decode(tok.tokenizer.encode(SAY, { addSpecialTokens: false }).slice(0, 5)));
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: 5 });
    expect(chunks.filter((c) => c.choices[0]?.finish_reason === "length")).toHaveLength(1);
    await expectPrefillRelayed(cluster!);
    await gw.settle();
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(1);
  });

  it("n=3: the prefill leg is skipped (fan-out) and three choices come back", async () => {
    const gw = await start();
    const { data, response } = await sdk(gw)
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], n: 3, max_tokens: 4, seed: 1 })
      .withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    expect(data.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const d = await expectPrefillSkipped(cluster!);
    expect((d.sampling_params as Record<string, unknown>).n).toBe(3);
    expect(data.usage!.completion_tokens).toBeGreaterThanOrEqual(3);
  });

  it("n=3 streamed: every index gets its role, text and finish_reason", async () => {
    const gw = await start();
    const stream = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: `<sim-say>${SAY}</sim-say>` }], n: 3, max_tokens: 3, ignore_eos: true, stream: true } as never);
    const byIndex = new Map<number, { role?: string; text: string; finish?: string | null }>();
    for await (const c of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      for (const ch of c.choices) {
        const e = byIndex.get(ch.index) ?? { text: "" };
        e.role ??= ch.delta.role;
        e.text += ch.delta.content ?? "";
        if (ch.finish_reason) e.finish = ch.finish_reason;
        byIndex.set(ch.index, e);
      }
    }
    expect([...byIndex.keys()].sort()).toEqual([0, 1, 2]);
    const texts = new Set([...byIndex.values()].map((e) => e.text));
    expect(texts.size).toBe(1);
    for (const e of byIndex.values()) expect(e).toMatchObject({ role: "assistant", finish: "length" });
    await expectPrefillSkipped(cluster!);
  });

  it("a stop string ends the reply at the gateway, cuts the text, and aborts the engine request", async () => {
    const gw = await start();
    const reply = "Alpha beta STOP gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho";
    const stream = await sdk(gw).chat.completions.create({
      model: MODEL, messages: [{ role: "user", content: `<sim-say>${reply}</sim-say>` }], max_tokens: 200, ignore_eos: true, stop: ["STOP"], stream: true,
    } as never);
    let text = "";
    let finish: string | null | undefined;
    let stopReason: unknown;
    for await (const c of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      for (const ch of c.choices) {
        text += ch.delta.content ?? "";
        if (ch.finish_reason) {
          finish = ch.finish_reason;
          stopReason = (ch as unknown as { stop_reason: unknown }).stop_reason;
        }
      }
    }
    expect(text).toBe("Alpha beta ");
    expect(finish).toBe("stop");
    expect(stopReason).toBe("STOP");
    // The leg was cancelled: the decode engine got an Abort for the request and freed it.
    await eventually(async () => {
      const aborts = (await cluster!.stats("decode")).recent.filter((r) => r.method === "Abort");
      expect(aborts).toHaveLength(1);
    });
    const [d] = await generatesReceived(cluster!, "decode");
    expect((d!.sampling_params as Record<string, unknown>).stop).toEqual(["STOP"]);
    await gw.settle();
  });

  it("a stop string, not streamed: the text is cut and finish_reason is stop", async () => {
    const gw = await start();
    const r = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "<sim-say>one two three four</sim-say>" }], max_tokens: 12, ignore_eos: true, stop: [" three"] } as never);
    expect(r.choices[0]!.message.content).toBe("one two");
    expect(r.choices[0]!.finish_reason).toBe("stop");
  });

  it("tokens that split UTF-8 characters never show U+FFFD in any delta", async () => {
    const gw = await start();
    const say = "😀🎉 你好，世界 👨‍👩‍👧 🇯🇵 𠀋";
    // Load the tokenizer first to know the reply's length in tokens.
    await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
    const tok = await gatewayTokenizer(gw);
    const ids = tok.tokenizer.encode(say, { addSpecialTokens: false });
    expect(ids.some((id) => tok.tokenizer.decode([id]).includes("\ufffd"))).toBe(true); // the case is real
    const stream = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: `<sim-say>${say}</sim-say>` }], max_tokens: ids.length, ignore_eos: true, stream: true } as never);
    const deltas: string[] = [];
    for await (const c of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) for (const ch of c.choices) if (ch.delta.content) deltas.push(ch.delta.content);
    for (const d of deltas) expect(d).not.toContain("\ufffd");
    expect(deltas.join("")).toBe(say);
    expect(deltas.length).toBeGreaterThan(1);
  });

  it("content-part arrays: text parts are joined with a newline; a non-text part is a 400 naming it", async () => {
    const gw = await start();
    await sdk(gw).chat.completions.create({
      model: MODEL, messages: [{ role: "user", content: [{ type: "text", text: "first" }, { type: "text", text: "second" }] }], max_tokens: 2,
    });
    const tok = await gatewayTokenizer(gw);
    const [p] = await generatesReceived(cluster!, "prefill");
    expect(tok.tokenizer.decode((p!.tokenized as { input_ids: number[] }).input_ids)).toContain("<|im_start|>user\nfirst\nsecond<|im_end|>");
    const err = await sdk(gw)
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "https://x.test/a.png" } }] }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages[0].content[1]");
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("unsupported_content");
  });
});

describe("completions", () => {
  it("n=1 not streamed, and streamed with usage", async () => {
    const gw = await start();
    const prompt = `Continue: <sim-say>${SAY}</sim-say>`;
    const { data, response } = await sdk(gw).completions.create({ model: MODEL, prompt, max_tokens: 4, ignore_eos: true } as never).withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(data.object).toBe("text_completion");
    const tok = await gatewayTokenizer(gw);
    const sayIds = tok.tokenizer.encode(SAY, { addSpecialTokens: false });
    expect(data.choices[0]!.text).toBe(tok.tokenizer.decode(sayIds.slice(0, 4)));
    // The prompt is encoded as it is, with the tokenizer's own special-token rule.
    const { ids } = await expectPrefillRelayed(cluster!);
    expect(ids).toEqual(tok.tokenizer.encode(prompt));
    expect(data.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 4 });

    const stream = await sdk(gw).completions.create({ model: MODEL, prompt, max_tokens: 4, ignore_eos: true, stream: true, stream_options: { include_usage: true } } as never);
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const c of stream as unknown as AsyncIterable<OpenAI.Completion>) {
      text += c.choices.map((ch) => ch.text).join("");
      if (c.usage) usage = c.usage;
    }
    expect(text).toBe(data.choices[0]!.text);
    expect(usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 4, total_tokens: ids.length + 4 });
  });

  it("token-id prompts are sent as they are; n=3 skips prefill; a batch is a 400 naming prompt", async () => {
    const gw = await start();
    const r = await sdk(gw).completions.create({ model: MODEL, prompt: [9707, 11, 1879], max_tokens: 2, n: 3 }).withResponse();
    expect(r.response.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    expect(r.data.choices).toHaveLength(3);
    const d = await expectPrefillSkipped(cluster!);
    expect((d.tokenized as { input_ids: number[] }).input_ids).toEqual([9707, 11, 1879]);
    const err = await sdk(gw).completions.create({ model: MODEL, prompt: ["a", "b"], max_tokens: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("prompt");
  });
});

describe("checked before any engine work", () => {
  it("prompt + max_tokens over the context window: 400 naming the numbers and the field; no leg runs", async () => {
    const gw = await start();
    const err = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: CONTEXT }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param).toBe("max_tokens");
    expect(e.code).toBe("context_length_exceeded");
    expect(e.message).toMatch(new RegExp(`maximum context length is ${CONTEXT} tokens; the messages has \\d+ tokens and max_tokens asks for ${CONTEXT}`));
    expect((await cluster!.stats("prefill")).generateRequests).toBe(0);
    expect((await cluster!.stats("decode")).generateRequests).toBe(0);

    const err2 = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_completion_tokens: CONTEXT }).catch((x: unknown) => x);
    expect((err2 as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("max_completion_tokens");
  });

  it("a sampling field out of range is a 400 naming it", async () => {
    const gw = await start();
    const err = await sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], temperature: 5 }).catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("temperature");
    expect((await cluster!.stats("decode")).generateRequests).toBe(0);
  });

  it("a bundle whose sha256 does not match: 502 tokenizer_unavailable naming the engine, no leg runs", async () => {
    const model = "qwen3-bad-sha256";
    const gw = await start(model);
    const err = await sdk(gw).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.status).toBe(502);
    expect(e.code).toBe("tokenizer_unavailable");
    expect(e.message).toMatch(/Engine 'decode' gave no usable tokenizer for model 'qwen3-bad-sha256': tokenizer bundle: sha256 mismatch/);
    expect((await cluster!.stats("prefill")).generateRequests).toBe(0);
    expect((await cluster!.stats("decode")).generateRequests).toBe(0);
    await gw.settle();
    expect(gw.metrics.ofType("request")[0]).toMatchObject({ status: 502, errorCode: "tokenizer_unavailable" });
  });
});

describe("tokenizer caching", () => {
  it("one fetch per isolate for concurrent requests; a fresh isolate reads the bundle from the Cache API", async () => {
    const gw = await start();
    const rs = await Promise.all(
      Array.from({ length: 4 }, () => sdk(gw).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 1 })),
    );
    expect(rs).toHaveLength(4);
    const first = await gatewayTokenizer(gw);
    await gw.settle(); // the Cache API writes run in waitUntil
    const cold = testGateway(config(cluster!));
    const r = await sdk(cold).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
    expect(r.choices).toHaveLength(1);
    const second = await gatewayTokenizer(cold);
    expect(second.source).toBe("cache");
    expect(second.sha256).toBe(first.sha256);
    expect(second.maxContextLength).toBe(CONTEXT);
    expect(tokenizersOf(cold.isolate).conflicts()).toEqual([]);
  });
});

it("GET /v1/models lists a VllmEngine-served model for the OpenAI surface", async () => {
  const gw = await start();
  const page = await sdk(gw).models.list();
  expect(page.data.map((m) => [m.id, (m as unknown as { surfaces: string[] }).surfaces])).toEqual([[MODEL, ["openai", "engine"]]]);
});
