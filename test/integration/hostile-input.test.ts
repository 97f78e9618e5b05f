// Client input that once reached a 500 or an engine (issue 32), tried as an attacker would on
// both surfaces and both engine kinds: lone surrogates and JSON nested past 512 levels are
// 400s naming the field; continue_final_message with add_generation_prompt is vLLM's own 400;
// a junk traceparent is dropped, not forwarded; a Connect request_id with a newline and a NaN
// sampling float are INVALID_ARGUMENT naming the field; and a decode engine whose connection
// dies under a non-streamed OpenAI request over VllmEngine engines is 503 UNAVAILABLE naming
// it (not a 500), as over OpenAI HTTP it is 502. Nothing refused here reaches an engine.
import { afterEach, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST } from "../support/pd-fixtures.js";
import { GenerateRequestSchema } from "../../src/gen/vllm_engine_pb.js";
import type { EngineSpec } from "../../sim/types.js";

const MODEL = "Qwen/Qwen3-0.6B";
type Kind = "connect" | "grpc-web" | "openai-http";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(kind: Kind): Promise<TestGateway> {
  const specs: EngineSpec[] = [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: MODEL, port: 0, latency: FAST },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: MODEL, port: 0, latency: FAST },
  ];
  cluster = await startTestCluster({ engines: specs });
  const http = kind === "openai-http" ? { kv_connector: "NixlConnector" } : {};
  return testGateway({
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: cluster.url("prefill"), transport: kind, ...http }],
        decode: [{ name: "decode", url: cluster.url("decode"), transport: kind }],
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  });
}

async function post(gw: TestGateway, route: string, body: string, headers: Record<string, string> = {}) {
  const res = await gw.fetch(`http://gateway.test${route}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  const error = res.status === 200 ? undefined : (JSON.parse(text) as { error: { message: string; param: string | null; code: string } }).error;
  return { status: res.status, code: res.headers.get("x-gateway-error-code"), error };
}

async function engineRequests(): Promise<number> {
  return (await cluster!.stats("prefill")).generateRequests + (await cluster!.stats("decode")).generateRequests;
}

const chat = (fields: string) => `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"max_tokens":3${fields}}`;
const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

describe("the OpenAI surface, on each engine kind", () => {
  for (const kind of ["grpc-web", "openai-http"] as const) {
    describe(`${kind} engines`, () => {
      it.each([
        ["a lone surrogate in content", "/v1/chat/completions", `{"model":"${MODEL}","messages":[{"role":"user","content":"hi \\ud800 there"}],"max_tokens":3}`, "messages[0].content"],
        ["a lone surrogate in a content part", "/v1/chat/completions", `{"model":"${MODEL}","messages":[{"role":"user","content":[{"type":"text","text":"\\udfff"}]}],"max_tokens":3}`, "messages[0].content[0].text"],
        ["a lone surrogate in stop", "/v1/chat/completions", chat(',"stop":["ok","\\udc00"]'), "stop[1]"],
        ["a lone surrogate in the prompt", "/v1/completions", `{"model":"${MODEL}","prompt":"a \\ud800","max_tokens":3}`, "prompt"],
        ["a field nested 600 levels deep", "/v1/chat/completions", chat(`,"extra":${nested(600)}`), "extra[0][0]"],
        ["a content part nested 200 000 levels deep", "/v1/chat/completions", `{"model":"${MODEL}","messages":[{"role":"user","content":[{"type":"text","text":"t","x":${nested(200_000)}}]}]}`, "messages[0].content"],
        ["continue_final_message with add_generation_prompt", "/v1/chat/completions", chat(',"continue_final_message":true,"add_generation_prompt":true'), "continue_final_message"],
      ])("%s: 400 naming the field, no engine work", async (_name, route, body, param) => {
        const gw = await start(kind);
        const out = await post(gw, route, body);
        expect(out.status).toBe(400);
        expect(out.code).toBe("invalid_request");
        expect(out.error?.param).toBe(param);
        expect(out.error?.message.startsWith(`${param}: `)).toBe(true);
        expect(await engineRequests()).toBe(0);
      });

      it("continue_final_message alone, or add_generation_prompt alone, is served; both is vLLM's words", async () => {
        const gw = await start(kind);
        const continued = `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure, "}],"max_tokens":3`;
        expect((await post(gw, "/v1/chat/completions", `${continued},"continue_final_message":true}`)).status).toBe(200);
        expect((await post(gw, "/v1/chat/completions", chat(',"add_generation_prompt":true'))).status).toBe(200);
        const both = await post(gw, "/v1/chat/completions", `${continued},"continue_final_message":true,"add_generation_prompt":true}`);
        expect(both.error?.message).toBe("continue_final_message: Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
      });
    });
  }

  it("a junk traceparent is not forwarded to the engine, a valid one is", async () => {
    const gw = await start("openai-http");
    const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect((await post(gw, "/v1/chat/completions", chat(""), { traceparent: "x".repeat(8000), tracestate: "a=b" })).status).toBe(200);
    expect((await post(gw, "/v1/chat/completions", chat(""), { traceparent: valid, tracestate: "a=b" })).status).toBe(200);
    const seen = (await cluster!.stats("decode")).recent.map((r) => [r.headers?.traceparent, r.headers?.tracestate]);
    expect(seen).toEqual([[undefined, undefined], [valid, "a=b"]]);
  });

  it.each([
    ["connect", 503, "decode_worker_failed_to_start", /^Decode worker failed to start: Network connection lost\. \(decode engine 'decode'\)$/],
    ["grpc-web", 503, "decode_worker_failed_to_start", /^Decode worker failed to start: Network connection lost\. \(decode engine 'decode'\)$/],
    ["openai-http", 502, "decode_request_failed", /^Decode transport error: Network connection lost\. \(decode engine 'decode'\)$/],
  ] as const)("a decode engine's connection dies under a non-streamed request (%s engines): %s %s naming it", async (kind, status, code, message) => {
    const gw = await start(kind);
    await cluster!.setFaults("decode", { dropConnection: true });
    const out = await post(gw, "/v1/chat/completions", chat(""));
    expect(out.status).toBe(status);
    expect(out.code).toBe(code);
    expect(out.error?.message).toMatch(message);
  });
});

describe("the VllmEngine surface (Connect)", () => {
  async function refused(gw: TestGateway, req: Parameters<typeof create<typeof GenerateRequestSchema>>[1], json: boolean): Promise<ConnectError | undefined> {
    try {
      const stream = gw.engineClient("connect", !json).generate(req as never, { headers: { "x-model": MODEL } });
      for await (const _ of stream);
    } catch (err) {
      return ConnectError.from(err);
    }
    return undefined;
  }

  it.each([
    ["a request_id with a newline", { requestId: "a\nb" }, "request_id"],
    ["a request_id with a carriage return", { requestId: "id\r\nx-injected: 1" }, "request_id"],
    ["a request_id with a NUL", { requestId: "a\u0000" }, "request_id"],
    ["temperature NaN", { samplingParams: { maxTokens: 3, temperature: Number.NaN } }, "sampling_params.temperature"],
    ["top_p Infinity", { samplingParams: { maxTokens: 3, topP: Number.POSITIVE_INFINITY } }, "sampling_params.top_p"],
    ["a logit_bias of -Infinity", { samplingParams: { maxTokens: 3, logitBias: { 7: Number.NEGATIVE_INFINITY } } }, "sampling_params.logit_bias[7]"],
  ])("%s: INVALID_ARGUMENT naming the field, never sent to an engine", async (_name, fields, field) => {
    const gw = await start("connect");
    for (const json of [true, false]) {
      const err = await refused(gw, { input: { case: "text", value: "hi" }, samplingParams: { maxTokens: 3 }, stream: true, ...fields }, json);
      expect(err?.code).toBe(Code.InvalidArgument);
      expect(err?.metadata.get("x-gateway-error-code")).toBe("invalid_request");
      expect(err?.rawMessage.startsWith(`${field}: `)).toBe(true);
    }
    expect(await engineRequests()).toBe(0);
  });

  it('temperature "NaN" as Connect JSON text', async () => {
    const gw = await start("connect");
    const body = JSON.stringify({ text: "hi", samplingParams: { maxTokens: 3, temperature: "NaN" }, stream: true });
    const frame = new Uint8Array(5 + body.length);
    new DataView(frame.buffer).setUint32(1, body.length);
    frame.set(new TextEncoder().encode(body), 5);
    const res = await gw.fetch("http://gateway.test/vllm.grpc.engine.VllmEngine/Generate", { method: "POST", headers: { "content-type": "application/connect+json", "x-model": MODEL }, body: frame });
    const text = await res.text();
    expect(text).toContain('"code":"invalid_argument"');
    expect(text).toContain("sampling_params.temperature: must be a finite number");
    expect(await engineRequests()).toBe(0);
  });

  it("lone surrogates in Connect JSON are refused by the decoder, naming the field", async () => {
    const gw = await start("connect");
    const err = await refused(gw, { input: { case: "text", value: "hi" }, samplingParams: { maxTokens: 3, stop: ["\ud800"] }, stream: true }, true);
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toContain("SamplingParams.stop");
    expect(await engineRequests()).toBe(0);
  });

  it("an Abort naming a request id with a newline is refused, naming it, and reaches no engine", async () => {
    const gw = await start("connect");
    const err = await gw
      .engineClient()
      .abort({ requestIds: ["fine", "bad\nid"] }, { headers: { "x-model": MODEL } })
      .then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toMatch(/^request_ids\[1\]: /);
    expect((await cluster!.stats("decode")).abortsReceived).toBe(0);
  });

  it("a well-formed request is still served, binary and JSON", async () => {
    const gw = await start("connect");
    const req = create(GenerateRequestSchema, { requestId: "ok-1", input: { case: "text", value: "hi" }, samplingParams: { maxTokens: 3, temperature: 0.5 }, stream: true });
    expect(toBinary(GenerateRequestSchema, req).byteLength).toBeGreaterThan(0);
    expect(await refused(gw, req, false)).toBeUndefined();
    expect(await refused(gw, { ...req, requestId: "ok-2" }, true)).toBeUndefined();
  });
});
