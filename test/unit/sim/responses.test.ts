// vLLM's Responses API on a sim engine, driven by the official `openai` SDK: the response
// object, the streamed event sequence (the SDK's stream helper must assemble it), errors,
// faults and cancellation, and the prompt shared with chat.
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detokenize, naturalLength, outputTokenIds, tokenize } from "../../../sim/tokens.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, parseNamedSse, postJson, resetAll, stats, waitFor } from "./helpers.js";

let c: RunningCluster;
let url: string;
let sdk: OpenAI;
const MODEL = "m-resp";
const PROMPT = "tell me a story about the sea";
const ids = tokenize(PROMPT);
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  c = await cluster([{ name: "r", role: "both", kvConnector: "none", model: MODEL, latency: FAST }]);
  url = c.engine("r").url;
  sdk = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

describe("non-streamed", () => {
  it("responses.create: vLLM's response object, incomplete when max_output_tokens caps it", async () => {
    const r = await sdk.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 4, instructions: undefined, metadata: { k: "v" } });
    const text = detokenize(outputTokenIds(ids, undefined, 0, 4));
    expect(r).toMatchObject({
      id: expect.stringMatching(/^resp_[0-9a-f]{32}$/), object: "response", model: MODEL, status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" }, max_output_tokens: 4, metadata: { k: "v" }, tool_choice: "none",
      output: [{ type: "message", id: expect.stringMatching(/^msg_/), status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] }],
      usage: { input_tokens: ids.length, output_tokens: 4, total_tokens: ids.length + 4, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
      kv_transfer_params: null,
    });
    expect(r.output_text).toBe(text);
    const s = await stats(c.engine("r"));
    expect(s.generateRequests).toBe(1);
    expect(s.recent.at(-1)).toMatchObject({ surface: "openai", method: "/v1/responses", requestId: `${r.id}_0`, body: { input: PROMPT, max_output_tokens: 4 } });
  });

  it("completed at the model's EOS; the body's request_id is the response id", async () => {
    const r = (await sdk.responses.create({ model: MODEL, input: PROMPT, request_id: "resp_mine" } as never)) as OpenAI.Responses.Response;
    const natural = naturalLength(ids, undefined, 0);
    expect(r).toMatchObject({ id: "resp_mine", status: "completed", incomplete_details: null, max_output_tokens: 32768 - ids.length });
    expect(r.usage?.output_tokens).toBe(natural);
    expect(r.output_text).toBe(detokenize(outputTokenIds(ids, undefined, 0, natural)));
  });

  it("ignore_eos and a stop string", async () => {
    const toks = outputTokenIds(ids, 5, 0, 12);
    const stop = detokenize([toks[6]!]).trim();
    const r = await sdk.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 12, seed: 5, ignore_eos: true, stop } as never) as OpenAI.Responses.Response;
    expect(r.status).toBe("completed");
    expect(r.output_text.includes(stop)).toBe(false);
    expect(detokenize(toks).startsWith(r.output_text)).toBe(true);
    const long = await sdk.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 40, ignore_eos: true } as never) as OpenAI.Responses.Response;
    expect(long.usage?.output_tokens).toBe(40);
  });

  it("the same prompt ids as the equivalent chat request: instructions, message items, text parts", async () => {
    const chat = (await (await postJson(`${url}/v1/chat/completions`, {
      model: MODEL, max_tokens: 6, messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hi" }, { type: "text", text: "there" }] }],
    })).json()) as Json;
    const r = await sdk.responses.create({
      model: MODEL, max_output_tokens: 6, instructions: "be brief",
      input: [{ role: "user", content: [{ type: "input_text", text: "hi" }, { type: "input_text", text: "there" }] }],
    });
    expect(r.usage?.input_tokens).toBe(chat.usage.prompt_tokens);
    expect(r.output_text).toBe(chat.choices[0].message.content);
    expect(tokenize("be brief\nhi there")).toHaveLength(chat.usage.prompt_tokens);
  });

  it("function_call and function_call_output items render as chat's tool call and tool message", async () => {
    const r = await sdk.responses.create({
      model: MODEL, max_output_tokens: 2,
      input: [
        { role: "user", content: "weather?" },
        { type: "function_call", call_id: "c1", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "sunny" },
      ],
    });
    // user, assistant tool call (no content), tool output: "weather?\n\nsunny"
    expect(r.usage?.input_tokens).toBe(tokenize("weather?\n\nsunny").length);
  });
});

describe("streamed", () => {
  it("responses.stream: the SDK assembles vLLM's events; finalResponse() is response.completed", async () => {
    const stream = sdk.responses.stream({ model: MODEL, input: PROMPT, max_output_tokens: 5 });
    const types: string[] = [];
    const deltas: string[] = [];
    const seqs: number[] = [];
    for await (const ev of stream) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === "response.output_text.delta") deltas.push(ev.delta);
    }
    const final = await stream.finalResponse();
    const text = detokenize(outputTokenIds(ids, undefined, 0, 5));
    expect(types).toEqual([
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      ...Array(5).fill("response.output_text.delta"),
      "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed",
    ]);
    expect(seqs).toEqual(types.map((_, i) => i));
    expect(deltas.join("")).toBe(text);
    expect(final).toMatchObject({ status: "incomplete", usage: { input_tokens: ids.length, output_tokens: 5 }, output: [{ type: "message", content: [{ type: "output_text", text }] }] });
    expect(final.output_text).toBe(text);
  });

  it("each event has its `event:` line naming its type; no [DONE]", async () => {
    const r = await postJson(`${url}/v1/responses`, { input: PROMPT, max_output_tokens: 2, stream: true });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const body = await r.text();
    const events = parseNamedSse(body);
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events.map((e) => e.event).at(-1)).toBe("response.completed");
    expect(body.includes("[DONE]")).toBe(false);
    // The streamed item id is a bare uuid; the completed response's message gets a new msg_ id.
    const added = events.find((e) => e.event === "response.output_item.added")!.data;
    expect(added.item.id).toMatch(/^[0-9a-f]{32}$/);
    expect(events.at(-1)!.data.response.output[0].id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(events.find((e) => e.event === "response.output_item.done")!.data.item).toMatchObject({ id: added.item.id, status: "completed", summary: [] });
  });

  it("a mid-stream failure ends with an error event and no response.completed; sse reset breaks the body", async () => {
    const fault = { "x-sim-fault": JSON.stringify({ failMidStream: { afterTokens: 2, code: "internal", message: "boom" } }) };
    const stream = await sdk.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 8, stream: true }, { headers: fault });
    const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of stream) seen.push(ev);
    expect(seen.filter((e) => e.type === "response.output_text.delta")).toHaveLength(2);
    expect(seen.at(-1)).toMatchObject({ type: "error", message: "boom", sequence_number: seen.length - 1 });
    expect(seen.map((e) => e.type)).not.toContain("response.completed");
    const reset = { "x-sim-fault": JSON.stringify({ failMidStream: { afterTokens: 1, code: "internal", sse: "reset" } }) };
    const broken = postJson(`${url}/v1/responses`, { input: PROMPT, max_output_tokens: 8, stream: true }, reset).then((r) => r.text());
    await expect(broken).rejects.toThrow();
  });

  it("a client disconnect stops generation and counts streamsCancelled", async () => {
    const ctrl = new AbortController();
    const r = await fetch(`${url}/v1/responses`, {
      method: "POST", signal: ctrl.signal, headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: PROMPT, ignore_eos: true, stream: true, max_output_tokens: 30_000 }),
    });
    await r.body!.getReader().read();
    ctrl.abort();
    await waitFor(async () => (await stats(c.engine("r"))).streamsCancelled === 1);
    expect((await stats(c.engine("r"))).activeRequests).toBe(0);
  });
});

describe("errors", () => {
  const errOf = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

  it("unknown model 404, a wrong type 400 naming the field, in vLLM's OpenAI error shape", async () => {
    const e404 = await errOf(sdk.responses.create({ model: "nope", input: "x" }));
    expect(e404?.status).toBe(404);
    expect(e404?.error).toMatchObject({ message: "The model `nope` does not exist.", type: "NotFoundError", param: "model", code: 404 });
    const e400 = await errOf(sdk.responses.create({ model: MODEL, input: "x", max_output_tokens: "many" as never }));
    expect(e400?.status).toBe(400);
    expect(e400?.error).toMatchObject({ param: "max_output_tokens" });
    const noInput = await postJson(`${url}/v1/responses`, { model: MODEL });
    expect(((await noInput.json()) as Json).error.param).toBe("input");
  });

  it("nothing is stored: previous_response_id is unknown (404) and background is refused", async () => {
    const prev = await errOf(sdk.responses.create({ model: MODEL, input: "x", previous_response_id: "resp_old" }));
    expect(prev?.status).toBe(404);
    expect(prev?.error).toMatchObject({ type: "invalid_request_error", param: "response_id", message: "Response with id 'resp_old' not found." });
    const bg = await errOf(sdk.responses.create({ model: MODEL, input: "x", background: true }));
    expect(bg?.status).toBe(400);
    expect(bg?.error).toMatchObject({ param: "background" });
  });

  it("the context window: prompt + max_output_tokens over it is a 400 naming max_output_tokens", async () => {
    const e = await errOf(sdk.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 32_768 }));
    expect(e?.status).toBe(400);
    expect(e?.error).toMatchObject({ param: "max_output_tokens" });
  });

  it("failStart: the mapped status before any event", async () => {
    const e = await errOf(sdk.responses.create({ model: MODEL, input: PROMPT, stream: true }, { headers: { "x-sim-fault": '{"failStart":{"code":"unavailable"}}' } }));
    expect(e?.status).toBe(503);
  });
});
