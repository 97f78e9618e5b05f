// Accept or refuse, never ignore, through the Worker in workerd against the sim: every field
// the OpenAI-on-VllmEngine table refuses gets its 400 unsupported_parameter naming it (and no
// engine is asked for anything); logprobs (streamed and not), prompt_logprobs and structured
// outputs reach the engine and come back in OpenAI's shapes, through the official SDK.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";
import { FIELD_ROWS } from "../support/engine-field-rows.js";

const MODEL = "Qwen/Qwen3-0.6B";
let cluster: TestCluster;
let gw: TestGateway;

beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [{ name: "engine", role: "both", kvConnector: "none", model: MODEL, port: 0, latency: FAST }],
  });
  gw = testGateway({ models: { [MODEL]: { regular: [{ name: "engine", url: cluster.url("engine"), transport: "connect" }] } }, pd: { engine_info_ttl_ms: 0 }, retry: { disabled: true } });
});
afterAll(async () => {
  await cluster?.close();
});

const sdk = () => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey: "x", fetch: gw.fetch as never, maxRetries: 0 });

async function post(api: "chat" | "completions", extra: Record<string, unknown>): Promise<Response> {
  const base = api === "chat" ? { model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2 } : { model: MODEL, prompt: "hi", max_tokens: 2 };
  return gw.fetch(`http://gateway.test/v1/${api === "chat" ? "chat/completions" : "completions"}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...base, ...extra }),
  });
}

describe("every refused field gets its 400, before any engine work", () => {
  const refused = Object.entries(FIELD_ROWS).filter(([, row]) => row[2] !== undefined);
  it("the table has refused fields to send", () => expect(refused.length).toBeGreaterThan(40));
  for (const [field, [api, , body]] of refused) {
    it(field, async () => {
      const res = await post(api, body!);
      expect(res.status).toBe(400);
      const err = ((await res.json()) as { error: { code: string; param: string; message: string } }).error;
      expect(err.code).toBe("unsupported_parameter");
      expect(res.headers.get("x-gateway-error-code")).toBe("unsupported_parameter");
      // tools/tool_choice rows and nested rows name the exact member that asked for it.
      expect(err.param === field || err.param.startsWith(`${field}.`) || field.startsWith(`${err.param}.`) || ["tools", "tool_choice"].includes(err.param)).toBe(true);
      expect(err.message).toContain(err.param);
    });
  }
  it("an unknown field, and no engine saw any of these requests", async () => {
    const res = await post("chat", { frobnicate: 1 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("frobnicate");
    expect((await cluster.stats("engine")).generateRequests).toBe(0);
  });
});

describe("logprobs", () => {
  it("chat, streamed and not: the same logprobs, with bytes and top_logprobs", async () => {
    const req = { model: MODEL, messages: [{ role: "user" as const, content: "<sim-say>Hello there, friend</sim-say>" }], max_tokens: 5, ignore_eos: true, logprobs: true, top_logprobs: 2 };
    const whole = await sdk().chat.completions.create(req);
    const content = whole.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(5);
    for (const c of content) {
      expect(c.logprob).toBeLessThan(0);
      expect(c.bytes).toEqual([...new TextEncoder().encode(c.token)]);
      expect(c.top_logprobs).toHaveLength(2);
      expect(c.top_logprobs[0]).toMatchObject({ token: c.token, logprob: c.logprob });
    }
    expect(content.map((c) => c.token).join("")).toBe(whole.choices[0]!.message.content);
    const [sent] = await generatesReceived(cluster, "engine");
    expect((sent!.sampling_params as Record<string, unknown>).logprobs).toBe(2);

    const stream = await sdk().chat.completions.create({ ...req, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const c of stream) for (const ch of c.choices) streamed.push(...(ch.logprobs?.content ?? []));
    expect(streamed).toEqual(content);
  });

  it("completions, streamed and not: tokens, token_logprobs, top_logprobs, text_offset", async () => {
    const req = { model: MODEL, prompt: "Say: <sim-say>one two three</sim-say>", max_tokens: 3, ignore_eos: true, logprobs: 1 } as const;
    const whole = await sdk().completions.create(req);
    const lp = whole.choices[0]!.logprobs!;
    expect(lp.tokens).toHaveLength(3);
    expect(lp.tokens!.join("")).toBe(whole.choices[0]!.text);
    expect(lp.text_offset).toEqual([0, lp.tokens![0]!.length, lp.tokens![0]!.length + lp.tokens![1]!.length]);
    expect(lp.top_logprobs!.map((d) => Object.keys(d!))).toEqual(lp.tokens!.map((t) => [t]));
    const stream = await sdk().completions.create({ ...req, stream: true });
    const tokens: string[] = [];
    const values: number[] = [];
    for await (const c of stream) for (const ch of c.choices) {
      tokens.push(...(ch.logprobs?.tokens ?? []));
      values.push(...(ch.logprobs?.token_logprobs ?? []));
    }
    expect({ tokens, values }).toEqual({ tokens: lp.tokens, values: lp.token_logprobs });
  });

  it("prompt_logprobs: vLLM's shape, null first; refused when streamed", async () => {
    const r = (await sdk().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi there" }], max_tokens: 1, prompt_logprobs: 1 } as never)) as unknown as { prompt_logprobs: (Record<string, { logprob: number; rank: number | null; decoded_token: string }> | null)[]; usage: { prompt_tokens: number } };
    expect(r.prompt_logprobs).toHaveLength(r.usage.prompt_tokens);
    expect(r.prompt_logprobs[0]).toBeNull();
    const second = r.prompt_logprobs[1]!;
    expect(Object.values(second)[0]).toMatchObject({ rank: 1 });
    expect(typeof Object.values(second)[0]!.decoded_token).toBe("string");
    const err = await sdk().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], stream: true, prompt_logprobs: 1 } as never).catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("prompt_logprobs");
  });
});

describe("structured outputs: the engine request carries the constraint, the sim honours it", () => {
  const ask = (extra: Record<string, unknown>) =>
    sdk().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "answer" }], max_tokens: 60, ...extra } as never) as unknown as Promise<OpenAI.ChatCompletion>;
  const lastSent = async () => (await generatesReceived(cluster, "engine")).at(-1)!.sampling_params as Record<string, unknown>;

  it("response_format json_schema", async () => {
    const schema = { type: "object", properties: { city: { type: "string" }, population: { type: "integer", minimum: 10 } }, required: ["city", "population"] };
    const r = await ask({ response_format: { type: "json_schema", json_schema: { name: "place", schema } } });
    expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ city: "sim", population: 10 });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    expect(JSON.parse((await lastSent()).json_schema as string)).toEqual(schema);
  });

  it("response_format json_object", async () => {
    const r = await ask({ response_format: { type: "json_object" } });
    expect(typeof JSON.parse(r.choices[0]!.message.content!)).toBe("object");
    expect((await lastSent()).json_object).toBe(true);
  });

  it("structured_outputs.choice and the older guided_choice", async () => {
    const r = await ask({ structured_outputs: { choice: ["positive", "negative"] } });
    expect(["positive", "negative"]).toContain(r.choices[0]!.message.content);
    expect((await lastSent()).choice).toEqual({ choices: ["positive", "negative"] });
    const g = await ask({ guided_choice: ["left", "right"] });
    expect(["left", "right"]).toContain(g.choices[0]!.message.content);
  });

  it("structured_outputs.regex", async () => {
    const re = "\\d{3}-[A-Z]{2}";
    const r = await ask({ structured_outputs: { regex: re } });
    expect(r.choices[0]!.message.content).toMatch(new RegExp(`^${re}$`));
    expect((await lastSent()).regex).toBe(re);
  });

  it("two constraints: a 400 naming both, no engine work", async () => {
    const before = (await generatesReceived(cluster, "engine")).length;
    const err = await ask({ response_format: { type: "json_object" }, structured_outputs: { regex: "a" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param).toBe("structured_outputs.regex");
    expect(e.message).toMatch(/response_format and structured_outputs\.regex/);
    expect(await generatesReceived(cluster, "engine")).toHaveLength(before);
  });
});

describe("prompt fields applied by the gateway", () => {
  it("truncate_prompt_tokens keeps the last ids; the engine request records it", async () => {
    const r = await sdk().completions.create({ model: MODEL, prompt: "one two three four five six seven eight", max_tokens: 1, truncate_prompt_tokens: 3 } as never);
    expect(r.usage!.prompt_tokens).toBe(3);
    const sent = (await generatesReceived(cluster, "engine")).at(-1)!;
    expect((sent.tokenized as { input_ids: number[] }).input_ids).toHaveLength(3);
    expect((sent.sampling_params as Record<string, unknown>).truncate_prompt_tokens).toBe(3);
  });
});
