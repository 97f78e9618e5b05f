// Function tools, reasoning and the stored conversation on the Responses API over the
// gateway's chat path (issue 29), through the official `openai` SDK, against the sim's
// VllmEngine Qwen3 engines (the gateway tokenizes, renders Qwen3's template and reads the
// reply with the hermes tool parser and the qwen3 reasoning parser). Scripted replies
// (<sim-say>…§</sim-say>, ended by the stop string "§" with ignore_eos) make the engines emit
// the markup as the model's own tokens.
import { env } from "cloudflare:workers";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generatesReceived } from "../support/pd-fixtures.js";
import { httpPairConfig, httpPairSpecs, MODEL as HTTP_MODEL } from "./openai-fixtures.js";

const QWEN = "Qwen/Qwen3-0.6B";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let cluster: TestCluster | undefined;
let current: TestGateway | undefined;
afterEach(async () => {
  // The gateway's Aborts (a stop string it applied ends the engine's request) finish first.
  await current?.settle();
  current = undefined;
  await cluster?.close();
  cluster = undefined;
});

async function gateway(auth?: { keys: string }): Promise<TestGateway> {
  cluster = await startTestCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: QWEN, port: 0, latency: FAST },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: QWEN, port: 0, latency: FAST },
    ],
  });
  const config = {
    models: { [QWEN]: { prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: "connect" }], decode: [{ name: "decode", url: cluster.url("decode"), transport: "grpc-web" }] } },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
    ...(auth ? { auth: { data_plane: "api_keys" } } : {}),
  };
  return (current = testGateway(config, { RESPONSES: env.RESPONSES, ...(auth ? { API_KEYS: auth.keys } : {}) }));
}

const sdk = (gw: TestGateway, apiKey = "x") => new OpenAI({ baseURL: "http://gateway.test/v1", apiKey, fetch: gw.fetch as never, maxRetries: 0 });

const TOOLS: OpenAI.Responses.FunctionTool[] = [
  { type: "function", name: "get_weather", description: "the weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: false },
  { type: "function", name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } }, strict: false },
];
const call = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
const say = (text: string) => `<sim-say>${text}§</sim-say>`;
/** The scripted reply's end: the gateway applies the stop string; the sim would otherwise cycle
 *  the reply or end it at a random length. */
const END = { stop: ["§"], ignore_eos: true } as Record<string, unknown>;

const calls = (r: OpenAI.Responses.Response) => r.output.filter((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === "function_call");

describe("function tools on the Responses API (VllmEngine engines)", () => {
  it("create: the model's calls as function_call items, after its text; the tools echoed", async () => {
    const gw = await gateway();
    const reply = `Let me check.\n${call("get_weather", '{"city": "Paris"}')}\n${call("get_time", '{"zone": "CET"}')}`;
    const r = await sdk(gw).responses.create({ model: QWEN, input: say(reply), tools: TOOLS, max_output_tokens: 80, ...END });
    expect(r.status).toBe("completed");
    expect(r.output.map((o) => o.type)).toEqual(["message", "function_call", "function_call"]);
    expect(r.output_text).toBe("Let me check.\n");
    expect(calls(r).map((c) => ({ name: c.name, arguments: c.arguments, status: c.status }))).toEqual([
      { name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
      { name: "get_time", arguments: '{"zone":"CET"}', status: "completed" },
    ]);
    for (const c of calls(r)) {
      expect(c.id).toMatch(/^fc_/);
      expect(c.call_id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
    }
    expect(new Set(calls(r).map((c) => c.call_id)).size).toBe(2);
    expect(r.tools).toEqual(TOOLS);
    expect(r.tool_choice).toBe("auto");
    // The tools went into the prompt (Qwen3's template lists them in the system turn).
    expect(JSON.stringify((await generatesReceived(cluster!, "decode")).at(-1))).toContain("get_weather");
  });

  it("stream: function_call items added, their arguments streamed, the final response as create's", async () => {
    const gw = await gateway();
    const reply = `Let me check.\n${call("get_weather", '{"city": "Paris"}')}\n${call("get_time", '{"zone": "CET"}')}`;
    const body = { model: QWEN, input: say(reply), tools: TOOLS, max_output_tokens: 80, ...END };
    const whole = await sdk(gw).responses.create(body);
    const stream = sdk(gw).responses.stream(body);
    const events: Json[] = [];
    stream.on("event", (e) => events.push(e));
    const final = await stream.finalResponse();
    const strip = (r: OpenAI.Responses.Response) => r.output.map((o) => (o.type === "function_call" ? { type: o.type, name: o.name, arguments: o.arguments, status: o.status } : o.type === "message" ? { type: o.type, text: o.content.map((c) => (c.type === "output_text" ? c.text : "")).join("") } : o));
    expect(strip(final)).toEqual(strip(whole));
    expect(final.status).toBe("completed");
    const added = events.filter((e) => e.type === "response.output_item.added" && e.item.type === "function_call");
    expect(added.map((e) => [e.output_index, e.item.name, e.item.status])).toEqual([[1, "get_weather", "in_progress"], [2, "get_time", "in_progress"]]);
    for (const [i, name, args] of [[1, "get_weather", '{"city":"Paris"}'], [2, "get_time", '{"zone":"CET"}']] as const) {
      const deltas = events.filter((e) => e.type === "response.function_call_arguments.delta" && e.output_index === i);
      expect(deltas.map((e) => e.delta).join("")).toBe(args);
      expect(events.find((e) => e.type === "response.function_call_arguments.done" && e.output_index === i)).toMatchObject({ name, arguments: args });
      expect(events.find((e) => e.type === "response.output_item.done" && e.output_index === i)?.item).toMatchObject({ type: "function_call", name, arguments: args, status: "completed" });
    }
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.at(-1)!.type).toBe("response.completed");
  });

  it('tool_choice "required" and a named function reach the engine as its constraint', async () => {
    const gw = await gateway();
    const named = await sdk(gw).responses.create({ model: QWEN, input: "weather?", tools: TOOLS, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 40 });
    const [d] = await generatesReceived(cluster!, "decode");
    expect(JSON.parse((d!.sampling_params as Json).json_schema as string)).toEqual(TOOLS[0]!.parameters);
    expect(calls(named).map((c) => c.name)).toEqual(["get_weather"]);
    expect(named.tool_choice).toEqual({ type: "function", name: "get_weather" });
    const required = await sdk(gw).responses.create({ model: QWEN, input: "anything", tools: TOOLS, tool_choice: "required", max_output_tokens: 60 });
    expect(calls(required).length).toBeGreaterThan(0);
    const none = await sdk(gw).responses.create({ model: QWEN, input: say(call("get_weather", '{"city": "Paris"}')), tools: TOOLS, tool_choice: "none", max_output_tokens: 40, ...END });
    expect(calls(none)).toEqual([]);
    expect(none.output_text).toContain("<tool_call>");
  });

  it("a bad tool_choice is a 400 naming the Responses field", async () => {
    const gw = await gateway();
    const err = await sdk(gw)
      .responses.create({ model: QWEN, input: "x", tools: TOOLS, tool_choice: { type: "function", name: "nope" } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("tool_choice.name");
  });

  it("a follow-up turn: function_call_output after previous_response_id; the engine gets the call and its result", async () => {
    const gw = await gateway();
    const first = await sdk(gw).responses.create({ model: QWEN, input: say(call("get_weather", '{"city": "Paris"}')), tools: TOOLS, max_output_tokens: 40, ...END });
    const [fc] = calls(first);
    expect(fc).toBeDefined();
    await gw.settle();
    // The sim says the first <sim-say> of the prompt: the instructions come first.
    const next = await sdk(gw).responses.create({
      model: QWEN,
      instructions: say("It is sunny in Paris."),
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: fc!.call_id, output: '{"sky": "clear", "celsius": 21}' }],
      tools: TOOLS,
      max_output_tokens: 40,
      ...END,
    });
    expect(next.previous_response_id).toBe(first.id);
    expect(next.output_text).toBe("It is sunny in Paris.");
    const prompt = JSON.stringify((await generatesReceived(cluster!, "decode")).at(-1));
    // Qwen3's template: the earlier call as the assistant's <tool_call>, the output as a <tool_response>.
    const callAt = prompt.indexOf("get_weather\\\", \\\"arguments\\\"");
    expect(callAt).toBeGreaterThan(0);
    expect(prompt.indexOf("<tool_response>")).toBeGreaterThan(callAt);
    expect(prompt).toContain("celsius");
  });
});

describe("reasoning on the Responses API (VllmEngine engines)", () => {
  it("<think> text is a reasoning item before the message, streamed and not; effort accepted", async () => {
    const gw = await gateway();
    const body = { model: QWEN, input: say("<think>\nweigh it\n</think>\n\nThe answer."), reasoning: { effort: "low" as const }, max_output_tokens: 30, ...END };
    const whole = await sdk(gw).responses.create(body);
    expect(whole.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    const rs = whole.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(rs).toMatchObject({ summary: [], content: [{ type: "reasoning_text", text: "\nweigh it\n" }] });
    expect(rs.id).toMatch(/^rs_/);
    expect(whole.output_text).toBe("\n\nThe answer.");
    expect(whole.reasoning).toEqual({ effort: "low" });

    const stream = sdk(gw).responses.stream(body);
    const events: Json[] = [];
    stream.on("event", (e) => events.push(e));
    const final = await stream.finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect((final.output[0] as OpenAI.Responses.ResponseReasoningItem).content).toEqual([{ type: "reasoning_text", text: "\nweigh it\n" }]);
    expect(events.filter((e) => e.type === "response.reasoning_text.delta").map((e) => e.delta).join("")).toBe("\nweigh it\n");
    expect(events.find((e) => e.type === "response.reasoning_text.done")).toMatchObject({ output_index: 0, text: "\nweigh it\n" });
    expect(final.output_text).toBe("\n\nThe answer.");
  });

  it("a reasoning summary other than auto is refused by name", async () => {
    const gw = await gateway();
    const err = await sdk(gw)
      .responses.create({ model: QWEN, input: "x", reasoning: { summary: "detailed" } })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("reasoning.summary");
  });
});

describe("GET /v1/responses/{id}/input_items", () => {
  it("the conversation the response came from, newest first by default, paged by the SDK; another key gets 404", async () => {
    const gw = await gateway({ keys: "key-a,key-b" });
    const a = sdk(gw, "key-a");
    const first = await a.responses.create({ model: QWEN, input: say(call("get_weather", '{"city": "Paris"}')), tools: TOOLS, max_output_tokens: 40, ...END });
    await gw.settle();
    const [fc] = calls(first);
    const second = await a.responses.create({
      model: QWEN,
      previous_response_id: first.id,
      input: [
        { type: "function_call_output", call_id: fc!.call_id, output: "21C" },
        { role: "user", content: "and tomorrow?" },
      ],
      max_output_tokens: 4,
    });
    await gw.settle();

    const asc: Json[] = [];
    for await (const item of a.responses.inputItems.list(second.id, { order: "asc", limit: 2 })) asc.push(item);
    expect(asc.map((i) => i.type)).toEqual(["message", "function_call", "function_call_output", "message"]);
    expect(asc[0]).toMatchObject({ role: "user", status: "completed" });
    expect(asc[1]).toMatchObject({ id: fc!.id, call_id: fc!.call_id, name: "get_weather" });
    expect(asc[3]!.content).toEqual([{ type: "input_text", text: "and tomorrow?" }]);
    expect(new Set(asc.map((i) => i.id)).size).toBe(4);

    const page = await a.responses.inputItems.list(second.id, { limit: 3 });
    expect(page.data.map((i) => i.id)).toEqual(asc.slice(1).reverse().map((i) => i.id));
    expect(page.has_more).toBe(true);
    const raw = (await (await gw.fetch(`http://gateway.test/v1/responses/${second.id}/input_items?limit=1`, { headers: { authorization: "Bearer key-a" } })).json()) as Json;
    expect(raw).toEqual({ object: "list", data: [asc[3]], first_id: asc[3]!.id, last_id: asc[3]!.id, has_more: true });

    const other = await gw.fetch(`http://gateway.test/v1/responses/${second.id}/input_items`, { headers: { authorization: "Bearer key-b" } });
    expect(other.status).toBe(404);
    expect(((await other.json()) as Json).error.code).toBe("response_not_found");
    const bad = await gw.fetch(`http://gateway.test/v1/responses/${second.id}/input_items?after=nope`, { headers: { authorization: "Bearer key-a" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error.param).toBe("after");
  });
});

describe("GET /v1/responses/{id}/input_items on openai-http engines (the native path)", () => {
  it("the same list: the earlier turn's input and output, then the new input", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster), { RESPONSES: env.RESPONSES });
    const first = await sdk(gw).responses.create({ model: HTTP_MODEL, input: "hello", max_output_tokens: 3 });
    await gw.settle();
    const second = await sdk(gw).responses.create({ model: HTTP_MODEL, input: "again", previous_response_id: first.id, max_output_tokens: 3 });
    await gw.settle();
    const page = await sdk(gw).responses.inputItems.list(second.id, { order: "asc" });
    expect(page.data.map((i) => i.type)).toEqual(["message", ...first.output.map((o) => o.type), "message"]);
    expect(page.data.at(-1)).toMatchObject({ role: "user", content: [{ type: "input_text", text: "again" }] });
    expect(page.data[1]!.id).toBe(first.output[0]!.id);
    expect(page.has_more).toBe(false);
  });
});

describe("metrics on the via-chat path", () => {
  it("requests are recorded under /v1/responses, streamed and not", async () => {
    const gw = await gateway();
    await sdk(gw).responses.create({ model: QWEN, input: say("hi there"), max_output_tokens: 8, ...END });
    await sdk(gw).responses.stream({ model: QWEN, input: say("hi there"), max_output_tokens: 8, ...END }).finalResponse();
    await gw.settle();
    const requests = gw.metrics.ofType("request");
    expect(requests.map((r) => [r.surface, r.endpoint, r.streaming, r.status])).toEqual([
      ["openai", "/v1/responses", false, 200],
      ["openai", "/v1/responses", true, 200],
    ]);
    const [done] = gw.metrics.ofType("stream_complete");
    expect(done).toMatchObject({ surface: "openai", endpoint: "/v1/responses" });
    expect(done!.outputTokens).toBeGreaterThan(0);
  });

  it("a refusal is one request event, whether the conversion or the chat path refused it", async () => {
    const gw = await gateway();
    const post = (body: Json) => gw.fetch("http://gateway.test/v1/responses", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: QWEN, ...body }) });
    expect((await post({ input: "x", tools: TOOLS, tool_choice: { type: "function", name: "nope" } })).status).toBe(400);
    expect((await post({ input: "x", max_output_tokens: 10_000_000 })).status).toBe(400); // the chat path: past the context window
    await gw.settle();
    expect(gw.metrics.ofType("request").map((r) => [r.endpoint, r.status])).toEqual([
      ["/v1/responses", 400],
      ["/v1/responses", 400],
    ]);
  });
});
