// Property-based fuzzing of every client surface with malformed and hostile input: whatever a
// client sends, the answer is a well-formed client error (or a normal answer when the input
// happens to be valid), never a 5xx, a hang or a crash, and the Worker keeps serving.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

const RUNS = 2_000;
const ZERO = { perPromptTokenMs: 0, perOutputTokenMs: 0, perBlockPullMs: 0, pullSetupMs: 0 };
let cluster: TestCluster;
let gw: TestGateway;

beforeAll(async () => {
  cluster = await startTestCluster({
    engines: [
      ...pairSpecs({ latency: ZERO }, { latency: ZERO }),
      { name: "http-prefill", role: "prefill", kvConnector: "NixlConnector", model: "mh", port: 0, latency: ZERO },
      // Qwen3 engines serve the real tokenizer bundle: OpenAI requests to "mq" are tokenized at the edge.
      { name: "q-prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "q-prefill", model: "fuzz-qwen3", port: 0, latency: ZERO },
      { name: "q-decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "q-decode", model: "fuzz-qwen3", port: 0, latency: ZERO },
      { name: "http-decode", role: "decode", kvConnector: "NixlConnector", model: "mh", port: 0, latency: ZERO },
    ],
  });
  const base = pairConfig(cluster);
  gw = testGateway({
    ...base,
    limits: { max_body_bytes: 64 * 1024, max_n: 8 },
    models: {
      ...base.models,
      mh: {
        prefill: [{ name: "http-prefill", url: cluster.url("http-prefill"), transport: "openai-http", kv_connector: "NixlConnector" }],
        decode: [{ name: "http-decode", url: cluster.url("http-decode"), transport: "openai-http" }],
      },
      mq: {
        prefill: [{ name: "q-prefill", url: cluster.url("q-prefill") }],
        decode: [{ name: "q-decode", url: cluster.url("q-decode") }],
      },
    },
  });
});
afterAll(async () => {
  await cluster.close();
});

/** Fails on a server error in any protocol: HTTP 5xx, grpc-status 2/13, Connect end-stream internal/unknown. */
async function expectClientSafe(res: Response): Promise<void> {
  const body = new Uint8Array(await res.arrayBuffer());
  const text0 = new TextDecoder().decode(body.slice(0, 300));
  // 501 is the protocol's own answer for an RPC the gateway does not serve (Embed, ...), not a failure.
  if (!(res.status === 501 && text0.includes('"code":"unimplemented"'))) expect(res.status, text0).toBeLessThan(500);
  const text = new TextDecoder().decode(body);
  for (const h of [res.headers.get("grpc-status"), /grpc-status:\s*(\d+)/.exec(text)?.[1]]) {
    if (h) expect(["2", "13"], `grpc-status ${h}: ${text.slice(0, 200)}`).not.toContain(h);
  }
  expect(text, text.slice(0, 300)).not.toMatch(/"code":"(internal|unknown)"/);
  if (res.status >= 400 && (res.headers.get("content-type") ?? "").includes("json")) {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(typeof (parsed.error ?? parsed.message)).not.toBe("undefined");
  }
}

const post = (path: string, body: BodyInit, contentType: string, headers: Record<string, string> = {}) =>
  gw.fetch(`http://gateway.test${path}`, { method: "POST", body, headers: { "content-type": contentType, ...headers } });

function envelope(payload: Uint8Array, flags = 0, lengthDelta = 0): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, Math.max(0, payload.length + lengthDelta));
  out.set(payload, 5);
  return out;
}

// Hostile JSON: valid keys with wrong types, huge numbers, deep nesting, random values.
const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -1, 0, 1.5, "", "x".repeat(5000), null, true, [], {}),
  fc.integer({ min: 1, max: 60 }).map((d) => JSON.parse("[".repeat(d) + "]".repeat(d)) as unknown),
);
const chatBody = fc.record(
  {
    // "mh": OpenAI HTTP engines; "mq": VllmEngine engines, tokenized at the edge. MODEL ("m")
    // has VllmEngine engines without GetTokenizer: an engine-side 502, not a client error.
    model: fc.oneof(fc.constant("mh"), fc.constant("mq"), hostileValue),
    messages: fc.oneof(fc.constant([{ role: "user", content: "hi" }]), fc.array(fc.record({ role: hostileValue, content: hostileValue }), { maxLength: 3 }), hostileValue),
    n: hostileValue,
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 40 }), hostileValue),
    stream: fc.oneof(fc.boolean(), hostileValue),
    stream_options: hostileValue,
    stop: hostileValue,
    seed: hostileValue,
    extra: hostileValue,
  },
  { requiredKeys: [] },
);
const rawBytes = fc.uint8Array({ maxLength: 512 });
const invalidUtf8 = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => new Uint8Array([0x7b, 0x22, 0xc3, 0x28, 0xff, ...b]));

describe("fuzz", () => {
  it(`OpenAI chat + completions: ${RUNS} hostile JSON bodies`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.oneof(chatBody.map((b) => JSON.stringify(b)), fc.string({ maxLength: 200 })), async (chat, body) => {
        const path = chat ? "/v1/chat/completions" : "/v1/completions";
        await expectClientSafe(await post(path, chat ? body : body.replace('"messages"', '"prompt"'), "application/json"));
      }),
      { numRuns: RUNS },
    );
  });

  it(`OpenAI: ${RUNS / 4} invalid UTF-8 and oversized bodies`, async () => {
    await fc.assert(
      fc.asyncProperty(invalidUtf8, fc.integer({ min: 0, max: 3 }), async (bytes, size) => {
        const body = size === 3 ? new Uint8Array(70 * 1024).fill(0x20) : bytes;
        await expectClientSafe(await post("/v1/chat/completions", body, "application/json"));
      }),
      { numRuns: RUNS / 4 },
    );
  });

  it(`Connect (JSON and protobuf, unary and streaming): ${RUNS} malformed requests`, async () => {
    const contentTypes = ["application/connect+proto", "application/connect+json", "application/proto", "application/json"];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...contentTypes),
        fc.constantFrom("Generate", "HealthCheck", "Abort", "GetServerInfo", "Embed", "Nope"),
        fc.oneof(rawBytes, chatBody.map((b) => new TextEncoder().encode(JSON.stringify(b)))),
        fc.boolean(),
        fc.integer({ min: -3, max: 3 }),
        async (ct, method, payload, framed, lengthDelta) => {
          const body = framed && ct.includes("+") ? envelope(payload, 0, lengthDelta) : payload;
          await expectClientSafe(await post(`/vllm.grpc.engine.VllmEngine/${method}`, body, ct, { "x-model": MODEL }));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it(`gRPC-web framing: ${RUNS} malformed requests`, async () => {
    await fc.assert(
      fc.asyncProperty(rawBytes, fc.integer({ min: 0, max: 255 }), fc.integer({ min: -3, max: 3 }), fc.boolean(), async (payload, flags, lengthDelta, framed) => {
        const body = framed ? envelope(payload, flags & 0x81, lengthDelta) : payload;
        await expectClientSafe(await post("/vllm.grpc.engine.VllmEngine/Generate", body, "application/grpc-web+proto", { "x-model": MODEL, "x-grpc-web": "1" }));
      }),
      { numRuns: RUNS },
    );
  });

  it("the Worker still serves, and no engine holds a pinned block", async () => {
    expect((await gw.fetch("http://gateway.test/health")).status).toBe(200);
    for (const e of cluster.engines) expect((await cluster.stats(e.spec.name)).blocksPinned).toBe(0);
  });
});
