// The sim's vLLM OpenAI server with the fields that shape a reply: tools and tool_choice under
// `--tool-call-parser hermes` / `--enable-auto-tool-choice`, `--reasoning-parser qwen3`,
// structured outputs, logprobs and stop strings, through the official openai SDK, streamed and
// not. Replies are scripted with <sim-say>.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptOf } from "../../../sim/script.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, postJson } from "./helpers.js";

let c: RunningCluster;
const MODEL = "m";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  c = await cluster([
    { name: "plain", role: "both", kvConnector: "none", model: MODEL, latency: FAST },
    { name: "parsers", role: "both", kvConnector: "none", model: MODEL, latency: FAST, toolCallParser: "hermes", enableAutoToolChoice: true, reasoningParser: "qwen3" },
    { name: "noauto", role: "both", kvConnector: "none", model: MODEL, latency: FAST, toolCallParser: "hermes" },
  ]);
});
afterAll(() => c.close());

const sdk = (engine: string) => new OpenAI({ baseURL: `${c.engine(engine).url}/v1`, apiKey: "x", maxRetries: 0 });
const WEATHER: OpenAI.ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string", enum: ["UTC"] } } } } },
];
const say = (text: string) => ({ model: MODEL, messages: [{ role: "user" as const, content: `<sim-say>${text}§</sim-say>` }], max_tokens: 300, ignore_eos: true, stop: ["§"] });
const CALL = '<tool_call>{"name": "get_weather", "arguments": {"city":"Paris"}}</tool_call>';

async function streamed(engine: string, body: Record<string, unknown>) {
  const stream = await sdk(engine).chat.completions.create({ ...body, stream: true } as never) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>;
  const out = { content: "", reasoning: "", calls: [] as { id?: string; name?: string; arguments: string; index: number }[], finish: [] as (string | null)[], logprobs: [] as OpenAI.ChatCompletionTokenLogprob[] };
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      const d = ch.delta as Json;
      out.content += d.content ?? "";
      out.reasoning += d.reasoning ?? "";
      for (const tc of d.tool_calls ?? []) {
        const at = (out.calls[tc.index] ??= { index: tc.index, arguments: "" });
        if (tc.id) at.id = tc.id;
        if (tc.function?.name) at.name = tc.function.name;
        at.arguments += tc.function?.arguments ?? "";
      }
      if (ch.finish_reason) out.finish.push(ch.finish_reason);
      out.logprobs.push(...(ch.logprobs?.content ?? []));
    }
  }
  return out;
}

describe("tool_choice auto", () => {
  it("is refused without --enable-auto-tool-choice and a tool parser, as vLLM does (tools alone mean auto)", async () => {
    for (const engine of ["plain", "noauto"]) {
      const err = (await sdk(engine).chat.completions.create({ ...say("hi"), tools: WEATHER }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.message).toContain('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set');
    }
  });

  it("tool_choice none: the markup stays in the content", async () => {
    const r = await sdk("plain").chat.completions.create({ ...say(CALL), tools: WEATHER, tool_choice: "none" });
    expect(r.choices[0]!.message.content).toBe(CALL);
    expect(r.choices[0]!.finish_reason).toBe("stop");
  });

  it("hermes + qwen3: reasoning apart, tool_calls with json.dumps arguments, finish_reason tool_calls", async () => {
    const r = await sdk("parsers").chat.completions.create({ ...say(`<think>The user wants the weather.</think>${CALL}`), tools: WEATHER });
    const ch = r.choices[0]!;
    expect(ch.finish_reason).toBe("tool_calls");
    expect((ch.message as Json).reasoning).toBe("The user wants the weather.");
    expect(ch.message.content).toBeNull();
    expect(ch.message.tool_calls).toEqual([{ id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/), type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }]);
  });

  it("streamed: reasoning deltas, then the call's name with an id and its argument text as the model wrote it", async () => {
    const s = await streamed("parsers", { ...say(`<think>The user wants the weather.</think>${CALL}`), tools: WEATHER });
    expect(s.reasoning).toBe("The user wants the weather.");
    expect(s.content).toBe("");
    expect(s.calls).toEqual([{ index: 0, id: expect.stringMatching(/^chatcmpl-tool-/), name: "get_weather", arguments: '{"city":"Paris"}' }]);
    expect(s.finish).toEqual(["tool_calls"]);
  });

  it("text before the call is content; after the last call it is dropped; two calls", async () => {
    const two = `</think>Checking.${CALL}${CALL.replace("Paris", "Oslo")} trailing`;
    const r = await sdk("parsers").chat.completions.create({ ...say(two), tools: WEATHER });
    expect(r.choices[0]!.message.content).toBe("Checking.");
    expect(r.choices[0]!.message.tool_calls!.map((t) => JSON.parse((t as Json).function.arguments))).toEqual([{ city: "Paris" }, { city: "Oslo" }]);
    const s = await streamed("parsers", { ...say(two), tools: WEATHER });
    expect(s.content).toBe("Checking.");
    expect(s.calls.map((t) => t.arguments)).toEqual(['{"city":"Paris"}', '{"city":"Oslo"}']);
  });

  it("n=2 streamed: each choice parses its own calls", async () => {
    const stream = await sdk("parsers").chat.completions.create({ ...say(`</think>${CALL}`), tools: WEATHER, n: 2, stream: true });
    const names = new Map<number, string[]>();
    for await (const chunk of stream) {
      for (const ch of chunk.choices) for (const tc of ch.delta.tool_calls ?? []) if (tc.function?.name) names.set(ch.index, [...(names.get(ch.index) ?? []), tc.function.name]);
    }
    expect(Object.fromEntries(names)).toEqual({ 0: ["get_weather"], 1: ["get_weather"] });
  });

  it("a call cut off by max_tokens: non-streamed finish_reason tool_calls, streamed length (as vLLM's two generators)", async () => {
    const text = `</think>${CALL} and more`;
    const body = { model: MODEL, messages: [{ role: "user" as const, content: `<sim-say>${text}</sim-say>` }], ignore_eos: true, max_tokens: scriptOf(`</think>${CALL}`).ids.length + 1, tools: WEATHER };
    const r = await sdk("parsers").chat.completions.create(body);
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.choices[0]!.message.tool_calls).toHaveLength(1);
    const s = await streamed("parsers", body);
    expect(s.finish).toEqual(["length"]);
    expect(s.calls).toHaveLength(1);
  });

  it("bad JSON inside the tags: no calls, the text is content", async () => {
    const r = await sdk("parsers").chat.completions.create({ ...say("</think><tool_call>{not json}</tool_call>"), tools: WEATHER });
    expect(r.choices[0]!.message.content).toBe("<tool_call>{not json}</tool_call>");
    expect(r.choices[0]!.finish_reason).toBe("stop");
  });
});

describe("qwen3 reasoning parser", () => {
  it("no </think>: everything is reasoning (thinking on, as current vLLM); enable_thinking false: content", async () => {
    const r = await sdk("parsers").chat.completions.create(say("just words"));
    expect(r.choices[0]!.message).toMatchObject({ content: null, reasoning: "just words" });
    const off = await sdk("parsers").chat.completions.create({ ...say("just words"), chat_template_kwargs: { enable_thinking: false } } as never);
    expect(off.choices[0]!.message).toMatchObject({ content: "just words", reasoning: null });
    const s = await streamed("parsers", say("<think>hmm</think>Answer."));
    expect(s).toMatchObject({ reasoning: "hmm", content: "Answer." });
  });

  it("include_reasoning false drops the reasoning and the logprobs", async () => {
    const r = await sdk("parsers").chat.completions.create({ ...say("<think>hmm</think>Answer."), include_reasoning: false, logprobs: true } as never);
    expect(r.choices[0]!.message).toMatchObject({ content: "Answer.", reasoning: null });
    expect(r.choices[0]!.logprobs).toBeNull();
  });
});

describe("named and required tool choices are structured outputs (no parser needed)", () => {
  it("named: one call of that function, arguments conforming to its parameters, finish_reason stop", async () => {
    const body = { model: MODEL, messages: [{ role: "user" as const, content: "weather?" }], max_tokens: 100, tools: WEATHER, tool_choice: { type: "function" as const, function: { name: "get_weather" } } };
    const r = await sdk("plain").chat.completions.create(body);
    const ch = r.choices[0]!;
    expect(ch.finish_reason).toBe("stop");
    expect(ch.message.content).toBe("");
    expect((ch.message.tool_calls![0] as Json).function.name).toBe("get_weather");
    expect(JSON.parse((ch.message.tool_calls![0] as Json).function.arguments)).toEqual({ city: "sim" });
    const s = await streamed("plain", body);
    expect(s.calls).toEqual([{ index: 0, id: expect.any(String), name: "get_weather", arguments: (ch.message.tool_calls![0] as Json).function.arguments }]);
    expect(s.finish).toEqual(["stop"]);
  });

  it("required: the calls of the array, finish_reason tool_calls", async () => {
    const body = { model: MODEL, messages: [{ role: "user" as const, content: "weather?" }], max_tokens: 100, tools: WEATHER, tool_choice: "required" as const };
    const r = await sdk("plain").chat.completions.create(body);
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.choices[0]!.message.tool_calls).toEqual([{ id: expect.any(String), type: "function", function: { name: "get_weather", arguments: '{"city": "sim"}' } }]);
    const s = await streamed("plain", body);
    expect(s.calls.map((t) => [t.name, t.arguments])).toEqual([["get_weather", '{"city": "sim"}']]);
    expect(s.finish).toEqual(["tool_calls"]);
  });

  it("vLLM's tool_choice checks", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tool_choice: "required" }, "When using `tool_choice`, `tools` must be set."],
      [{ tools: WEATHER, tool_choice: { type: "function", function: { name: "nope" } } }, "does not match any of the specified `tools`"],
      [{ tools: [] }, "`tools` must not be an empty array"],
    ];
    for (const [extra, msg] of cases) {
      const r = await postJson(`${c.engine("plain").url}/v1/chat/completions`, { ...say("x"), ...extra });
      expect(r.status).toBe(400);
      expect(((await r.json()) as Json).error.message).toContain(msg);
    }
  });
});

describe("structured outputs", () => {
  const schema = { type: "object", properties: { city: { type: "string" }, population: { type: "integer", minimum: 10 } }, required: ["city"] };
  it("response_format json_schema and json_object, structured_outputs choice and regex; streamed the same", async () => {
    const ask = (extra: Record<string, unknown>) => ({ model: MODEL, messages: [{ role: "user" as const, content: "answer" }], max_tokens: 60, ...extra });
    const js = await sdk("plain").chat.completions.create(ask({ response_format: { type: "json_schema", json_schema: { name: "p", schema } } }) as never) as OpenAI.ChatCompletion;
    expect(JSON.parse(js.choices[0]!.message.content!)).toEqual({ city: "sim", population: 10 });
    expect(js.choices[0]!.finish_reason).toBe("stop");
    const s = await streamed("plain", ask({ response_format: { type: "json_schema", json_schema: { name: "p", schema } } }));
    expect(s.content).toBe(js.choices[0]!.message.content);
    const obj = await sdk("plain").chat.completions.create(ask({ response_format: { type: "json_object" } }) as never) as OpenAI.ChatCompletion;
    expect(typeof JSON.parse(obj.choices[0]!.message.content!)).toBe("object");
    const choice = await sdk("plain").chat.completions.create(ask({ structured_outputs: { choice: ["yes", "no"] } }) as never) as OpenAI.ChatCompletion;
    expect(["yes", "no"]).toContain(choice.choices[0]!.message.content);
    const re = await sdk("plain").completions.create({ model: MODEL, prompt: "id", max_tokens: 20, structured_outputs: { regex: "[A-Z]{3}-\\d{2}" } } as never) as OpenAI.Completion;
    expect(re.choices[0]!.text).toMatch(/^[A-Z]{3}-\d{2}$/);
  });

  it("two kinds of constraint, or a json that is no schema, are 400s", async () => {
    for (const so of [{ json: schema, regex: "a" }, { json: "not json" }]) {
      const r = await postJson(`${c.engine("plain").url}/v1/chat/completions`, { ...say("x"), structured_outputs: so });
      expect(r.status).toBe(400);
    }
  });

  it("under a reasoning parser the constrained value follows an empty thought", async () => {
    const r = await sdk("parsers").chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 60, response_format: { type: "json_schema", json_schema: { name: "p", schema } } });
    expect(r.choices[0]!.message).toMatchObject({ reasoning: "" });
    expect(JSON.parse(r.choices[0]!.message.content!)).toMatchObject({ city: "sim" });
  });
});

describe("logprobs", () => {
  it("chat: one entry per token spelling the content, top_logprobs led by the sampled token; streamed the same", async () => {
    const body = { ...say("Hello there, friend"), logprobs: true, top_logprobs: 3 };
    const r = await sdk("plain").chat.completions.create(body);
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(r.usage!.completion_tokens);
    expect(content.map((t) => t.token).join("")).toBe("Hello there, friend§");
    for (const t of content) {
      expect(t.bytes).toEqual([...new TextEncoder().encode(t.token)]);
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.top_logprobs[0]).toEqual({ token: t.token, logprob: t.logprob, bytes: t.bytes });
    }
    const s = await streamed("plain", body);
    expect(s.logprobs).toEqual(content);
  });

  it("top_logprobs without logprobs, and above 20, are 400s", async () => {
    for (const extra of [{ top_logprobs: 2 }, { logprobs: true, top_logprobs: 21 }]) {
      const r = await postJson(`${c.engine("plain").url}/v1/chat/completions`, { ...say("x"), ...extra });
      expect(r.status).toBe(400);
      expect(((await r.json()) as Json).error.param).toBe("top_logprobs");
    }
  });

  it("completions: tokens, token_logprobs, top_logprobs and text_offset, streamed with running offsets", async () => {
    const body = { model: MODEL, prompt: "<sim-say>one two three</sim-say>", max_tokens: 3, ignore_eos: true, logprobs: 2 };
    const r = await sdk("plain").completions.create(body);
    const lp = r.choices[0]!.logprobs!;
    expect(lp.tokens!.join("")).toBe(r.choices[0]!.text);
    expect(lp.text_offset).toEqual([0, lp.tokens![0]!.length, lp.tokens![0]!.length + lp.tokens![1]!.length]);
    expect(lp.top_logprobs!.map((d) => Object.keys(d!).length)).toEqual([2, 2, 2]);
    const stream = await sdk("plain").completions.create({ ...body, stream: true });
    const offsets: number[] = [];
    for await (const ch of stream) offsets.push(...(ch.choices[0]?.logprobs?.text_offset ?? []));
    expect(offsets).toEqual(lp.text_offset);
  });
});

describe("stop strings", () => {
  const body = { model: MODEL, messages: [{ role: "user" as const, content: "<sim-say>one two STOP three</sim-say>" }], max_tokens: 40, ignore_eos: true, stop: ["STOP"] };
  it("cut before the first stop string, finish_reason stop, stop_reason names it", async () => {
    const r = await sdk("plain").chat.completions.create(body);
    expect(r.choices[0]).toMatchObject({ message: { content: "one two " }, finish_reason: "stop", stop_reason: "STOP" });
    const s = await streamed("plain", body);
    expect(s.content).toBe("one two ");
  });
  it("include_stop_str_in_output keeps it, streamed and not", async () => {
    const r = await sdk("plain").chat.completions.create({ ...body, include_stop_str_in_output: true } as never) as OpenAI.ChatCompletion;
    expect(r.choices[0]!.message.content).toBe("one two STOP");
    const s = await streamed("plain", { ...body, include_stop_str_in_output: true });
    expect(s.content).toBe("one two STOP");
  });
});
