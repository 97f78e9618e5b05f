// The prefill cap (pd/prefill-cap.ts): one output token, EOS ignored, no stop strings or stop
// token ids, one sample, not streamed, no min_tokens, no logprobs - whatever the client sent,
// through the PD plan and each transport's encoder (VllmEngine SamplingParams; vLLM OpenAI
// body members). The client's own values reach decode only.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GenerateRequestSchema, type SamplingParamsSchema } from "../../../src/gen/vllm_engine_pb.js";
import type { LegSpec, TransportTraits } from "../../../src/core/leg-transport.js";
import { encodeGenerateLeg } from "../../../src/backends/generate-request.js";
import { bodyWithSampling, buildEngineBody, type EngineHttpRoute, type OpenAiRoute } from "../../../src/backends/openai-bodies.js";
import { OPENAI_HTTP_TRAITS } from "../../../src/backends/openai-http-transport.js";
import { planPd, type PdOverride } from "../../../src/pd/plan.js";
import { prefillCap } from "../../../src/pd/prefill-cap.js";

const GRPC_TRAITS: TransportTraits = { typedBootstrap: true, pixelsOnPrefillOnly: true };
const NIXL = { kvConnector: "NixlConnector", bootstrapHost: "10.0.0.1" };

/** The prefill leg's spec as the plan makes it (n > 1 only with a forced prefill). */
function prefillSpec(traits: TransportTraits, fanout: number): LegSpec {
  const override: PdOverride | undefined = fanout > 1 ? "force-prefill" : undefined;
  const plan = planPd({ fanout, hasEncodeAssignments: false, hasMmInputs: false, prefill: NIXL, decode: NIXL, traits, mintTransferId: () => "x", ...(override ? { override } : {}) });
  if (!plan.prefill) throw new Error("prefill skipped");
  return { ...plan.prefill, requestId: "r" };
}

describe("prefillCap", () => {
  it("is the one cap every transport writes", () => {
    expect(prefillCap()).toEqual({ maxTokens: 1, minTokens: 0, n: 1, ignoreEos: true, stop: [], stopTokenIds: [], stream: false });
  });
  it("the plan puts it on every prefill leg it plans, on both transports", () => {
    for (const traits of [GRPC_TRAITS, OPENAI_HTTP_TRAITS]) {
      for (const fanout of [1, 4]) expect(prefillSpec(traits, fanout).sampling).toEqual(prefillCap());
    }
  });
});

type Sampling = Omit<MessageInitShape<typeof SamplingParamsSchema>, "$typeName">;

describe("VllmEngine Generate: the prefill request", () => {
  it.each<[string, Sampling, boolean]>([
    ["stop strings", { stop: ["\n", "END"], maxTokens: 64 }, false],
    ["stop token ids", { stopTokenIds: [7, 151645] }, false],
    ["EOS not ignored", { ignoreEos: false, maxTokens: 8 }, false],
    ["min_tokens", { minTokens: 5, maxTokens: 64 }, false],
    ["n = 4 (a forced prefill)", { n: 4 }, false],
    ["logprobs and prompt logprobs", { logprobs: 5, promptLogprobs: 1 }, false],
    ["a stream", { maxTokens: 20 }, true],
    ["no sampling params at all", {}, false],
  ])("client sent %s: capped; temperature and seed kept; decode gets the client's", (_name, sp, stream) => {
    const client = create(GenerateRequestSchema, {
      requestId: "c", input: { case: "text", value: "hello" }, stream,
      ...(Object.keys(sp).length > 0 ? { samplingParams: { temperature: 0.3, seed: 7, ...sp } } : {}),
    });
    const p = encodeGenerateLeg(client, prefillSpec(GRPC_TRAITS, sp.n ?? 1));
    const s = p.samplingParams!;
    expect({ maxTokens: s.maxTokens, minTokens: s.minTokens, n: s.n, ignoreEos: s.ignoreEos, stop: s.stop, stopTokenIds: s.stopTokenIds, logprobs: s.logprobs, promptLogprobs: s.promptLogprobs, stream: p.stream })
      .toEqual({ maxTokens: 1, minTokens: 0, n: 1, ignoreEos: true, stop: [], stopTokenIds: [], logprobs: undefined, promptLogprobs: undefined, stream: false });
    if (client.samplingParams) expect([s.temperature, s.seed]).toEqual([0.3, 7]);
    const d = encodeGenerateLeg(client, { leg: "decode", requestId: "r" });
    expect(d.samplingParams).toEqual(client.samplingParams);
    expect(d.stream).toBe(stream);
  });
});

describe("vLLM OpenAI HTTP: the prefill body", () => {
  const CHAT: OpenAiRoute = "/v1/chat/completions";
  const COMP: OpenAiRoute = "/v1/completions";
  const chat = { model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0.3, seed: 7 };
  const comp = { model: "m", prompt: "hi", temperature: 0.3, seed: 7 };
  it.each<[string, OpenAiRoute, Record<string, unknown>, Record<string, unknown>]>([
    ["chat: stop strings", CHAT, { ...chat, stop: ["\n", "END"] }, { max_tokens: 1 }],
    ["completions: a stop string", COMP, { ...comp, stop: "x" }, { max_tokens: 1 }],
    ["stop token ids", COMP, { ...comp, stop_token_ids: [7] }, { max_tokens: 1 }],
    ["EOS not ignored", CHAT, { ...chat, ignore_eos: false }, { max_tokens: 1 }],
    ["min_tokens", CHAT, { ...chat, min_tokens: 5, max_tokens: 64 }, { max_tokens: 1 }],
    ["chat: max_completion_tokens wins over max_tokens", CHAT, { ...chat, max_completion_tokens: 64, max_tokens: 64 }, { max_completion_tokens: 1 }],
    ["chat: max_completion_tokens null", CHAT, { ...chat, max_completion_tokens: null }, { max_completion_tokens: null, max_tokens: 1 }],
    ["completions ignore max_completion_tokens", COMP, { ...comp, max_completion_tokens: 9 }, { max_completion_tokens: 9, max_tokens: 1 }],
    ["n = 4 (a forced prefill)", COMP, { ...comp, n: 4 }, { n: 1, max_tokens: 1 }],
    ["n = 1 stays", CHAT, { ...chat, n: 1 }, { n: 1, max_tokens: 1 }],
    ["chat: logprobs and top_logprobs", CHAT, { ...chat, logprobs: true, top_logprobs: 3 }, { max_tokens: 1 }],
    ["completions: logprobs, echo kept", COMP, { ...comp, logprobs: 2, echo: true }, { max_tokens: 1, echo: true }],
    ["prompt_logprobs", CHAT, { ...chat, prompt_logprobs: 1 }, { max_tokens: 1 }],
    ["a stream with stream_options", CHAT, { ...chat, stream: true, stream_options: { include_usage: true } }, { max_tokens: 1 }],
    ["vendor fields are kept", CHAT, { ...chat, x_vendor: { a: [1] }, response_format: { type: "json_object" } }, { max_tokens: 1, x_vendor: { a: [1] }, response_format: { type: "json_object" } }],
  ])("%s: capped; the rest as sent; decode gets the client's bytes", (_name, route, body, extra) => {
    const spec = prefillSpec(OPENAI_HTTP_TRAITS, typeof body.n === "number" ? body.n : 1);
    const p = bodyWithSampling(route, body, spec.sampling!, spec.kvParamsJson);
    const { model, temperature, seed } = body;
    const prompt = route === CHAT ? { messages: body.messages } : { prompt: body.prompt };
    // The NIXL tag only where the handoff can be relayed (n <= 1).
    const tag = body.n === 4 ? {} : { kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } };
    expect(p).toEqual({ model, ...prompt, temperature, seed, ignore_eos: true, stream: false, ...tag, ...extra });
    const text = JSON.stringify(body);
    expect(buildEngineBody(text, undefined, body)).toBe(text);
  });
  it("does not change the client's body", () => {
    const body = { ...chat, stop: ["x"], stream: true, stream_options: { include_usage: true } };
    const before = structuredClone(body);
    bodyWithSampling(CHAT, body, prefillCap(), undefined);
    expect(body).toEqual(before);
  });
});

describe("vLLM Responses and Anthropic Messages over HTTP: the prefill body", () => {
  const RESP: EngineHttpRoute = "/v1/responses";
  const MSGS: EngineHttpRoute = "/v1/messages";
  const tag = { kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } };
  const resp = { model: "m", input: "hi", instructions: "be brief", temperature: 0.3 };
  const msgs = { model: "m", messages: [{ role: "user", content: "hi" }], system: "be brief", max_tokens: 64, temperature: 0.3, top_k: 5 };
  it.each<[string, EngineHttpRoute, Record<string, unknown>, Record<string, unknown>]>([
    ["responses: plain", RESP, resp, { ...resp, max_output_tokens: 1, ignore_eos: true, store: false, stream: false, ...tag }],
    ["responses: the client's cap, stop and stream", RESP, { ...resp, max_output_tokens: 500, stop: ["END"], stream: true }, { ...resp, max_output_tokens: 1, ignore_eos: true, store: false, stream: false, ...tag }],
    ["responses: logprobs asked for", RESP, { ...resp, top_logprobs: 3, include: ["message.output_text.logprobs", "reasoning.encrypted_content"] }, { ...resp, include: ["reasoning.encrypted_content"], max_output_tokens: 1, ignore_eos: true, store: false, stream: false, ...tag }],
    ["responses: a client's kv_transfer_params", RESP, { ...resp, kv_transfer_params: { remote_host: "evil" } }, { ...resp, max_output_tokens: 1, ignore_eos: true, store: false, stream: false, ...tag }],
    ["messages: plain (no ignore_eos on this API)", MSGS, msgs, { ...msgs, max_tokens: 1, stream: false, ...tag }],
    ["messages: stop_sequences and stream", MSGS, { ...msgs, stop_sequences: ["\n\nHuman:"], stream: true }, { ...msgs, max_tokens: 1, stream: false, ...tag }],
  ])("%s", (_name, route, body, want) => {
    const before = structuredClone(body);
    const spec = prefillSpec(OPENAI_HTTP_TRAITS, 1);
    expect(bodyWithSampling(route, body, spec.sampling!, spec.kvParamsJson)).toEqual(want);
    expect(body).toEqual(before);
  });
});
