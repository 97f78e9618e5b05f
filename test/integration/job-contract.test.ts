// The job contract (issue 27 item 1): the same request through every surface and transport
// (OpenAI chat relayed to openai-http engines, OpenAI chat tokenized by the gateway for
// VllmEngine engines over Connect and over gRPC-web, VllmEngine Generate over Connect) becomes
// the same job (api/job.ts), so it writes the same metrics events with the same fields
// (api/request-metrics.ts), gets the same decider answer for the same decider inputs, lands
// on the same engine for the same routing key, and fails with the same error for the same
// failure. Real Worker in workerd, real sim engines, no mocks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST } from "../support/pd-fixtures.js";
import type { GatewayEvent } from "../../src/metrics/events.js";
import type { EngineSpec } from "../../sim/types.js";

const MODEL = "Qwen/Qwen3-0.6B"; // the sim serves its real tokenizer (OpenAI over VllmEngine)
const TEXT = "Tell me about the edge of the network and what it is good for";
const MAX_TOKENS = 6;
const DEAD_URL = "http://127.0.0.1:9"; // discard port: nothing listens there

type Path = "openai-http" | "openai-connect" | "openai-grpc-web" | "generate-connect";
const PATHS: Path[] = ["openai-http", "openai-connect", "openai-grpc-web", "generate-connect"];

let cluster: TestCluster;
beforeAll(async () => {
  const engine = (name: string, role: EngineSpec["role"]): EngineSpec => ({ name, role, kvConnector: "NixlConnector", kvEngineId: `${name}-eng`, model: MODEL, port: 0, latency: FAST });
  cluster = await startTestCluster({ engines: [engine("prefill", "prefill"), engine("decode-a", "decode"), engine("decode-b", "decode"), engine("decode-c", "decode")] });
}, 30_000);
afterAll(() => cluster?.close());

interface GatewayOptions {
  pd?: Record<string, unknown>;
  decodes?: string[];
  policy?: Record<string, string>;
  prefillUrl?: string;
}

function transportOf(path: Path): string {
  return path === "openai-http" ? "openai-http" : path === "openai-grpc-web" ? "grpc-web" : "connect";
}

function gatewayFor(path: Path, o: GatewayOptions = {}): TestGateway {
  const transport = transportOf(path);
  return testGateway({
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: o.prefillUrl ?? cluster.url("prefill"), transport, ...(transport === "openai-http" ? { kv_connector: "NixlConnector" } : {}) }],
        decode: (o.decodes ?? ["decode-a"]).map((name) => ({ name, url: cluster.url(name), transport })),
        ...(o.pd ? { pd: o.pd } : {}),
        ...(o.policy ? { policy: o.policy } : {}),
      },
    },
    pd: { engine_info_ttl_ms: 0 },
    retry: { disabled: true },
  });
}

interface CallOptions {
  n?: number;
  headers?: Record<string, string>;
  model?: string;
  /** OpenAI: `temperature: "hot"`; Generate: a NaN temperature. */
  badField?: boolean;
}

/** What the client saw: ok, or the error's status/code and the field it names. */
interface Outcome {
  ok: boolean;
  status?: number;
  code?: string | null;
  param?: string | null;
  message?: string;
}

async function call(gw: TestGateway, path: Path, o: CallOptions = {}): Promise<Outcome> {
  return path === "generate-connect" ? callGenerate(gw, o) : callOpenAi(gw, o);
}

async function callOpenAi(gw: TestGateway, o: CallOptions): Promise<Outcome> {
  const body = {
    model: o.model ?? MODEL,
    messages: [{ role: "user", content: TEXT }],
    max_tokens: MAX_TOKENS,
    ignore_eos: true,
    n: o.n ?? 1,
    stream: true,
    stream_options: { include_usage: true },
    ...(o.badField ? { temperature: "hot" } : {}),
  };
  const res = await gw.fetch("http://gateway.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...o.headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) {
    const e = (JSON.parse(text) as { error: { code: string; param: string | null; message: string } }).error;
    return { ok: false, status: res.status, code: e.code, param: e.param, message: e.message };
  }
  if (text.includes('"error"')) throw new Error(`stream failed: ${text}`);
  return { ok: true };
}

async function callGenerate(gw: TestGateway, o: CallOptions): Promise<Outcome> {
  try {
    const stream = gw.engineClient("connect").generate(
      {
        requestId: "",
        input: { case: "text", value: TEXT },
        samplingParams: { maxTokens: MAX_TOKENS, ignoreEos: true, n: o.n ?? 1, ...(o.badField ? { temperature: Number.NaN } : {}) },
        stream: true,
      },
      { headers: { "x-model": o.model ?? MODEL, ...o.headers } },
    );
    for await (const _ of stream);
    return { ok: true };
  } catch (err) {
    const e = ConnectError.from(err);
    return { ok: false, code: e.metadata.get("x-gateway-error-code"), message: e.rawMessage };
  }
}

/** One event of a type (exactly one was written). */
function only<T extends GatewayEvent["type"]>(gw: TestGateway, type: T): Extract<GatewayEvent, { type: T }> {
  const all = gw.metrics.ofType(type);
  expect(all, type).toHaveLength(1);
  return all[0]!;
}

/** Which optional fields an event has: the presence every surface must agree on. */
function present(e: object): string[] {
  return Object.entries(e)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k)
    .sort();
}

const ENDPOINT: Record<Path, string> = {
  "openai-http": "/v1/chat/completions",
  "openai-connect": "/v1/chat/completions",
  "openai-grpc-web": "/v1/chat/completions",
  "generate-connect": "generate",
};

describe("the same job on every surface and transport", () => {
  it.each(PATHS)("%s: request, stream_complete and pd_decision with the same fields, TTFT from arrival, usage = tokens streamed", async (path) => {
    const gw = gatewayFor(path);
    expect(await call(gw, path)).toEqual({ ok: true });
    await gw.settle();

    const request = only(gw, "request");
    expect(request).toMatchObject({ model: MODEL, surface: path === "generate-connect" ? "engine" : "openai", endpoint: ENDPOINT[path], backend: "pd", streaming: true, status: 200 });
    expect(present(request)).toEqual(["backend", "durationMs", "endpoint", "model", "status", "streaming", "surface", "type"]);

    const done = only(gw, "stream_complete");
    expect(present(done)).toEqual(["endpoint", "generationMs", "inputTokens", "model", "outputTokens", "surface", "tpotMs", "ttftMs", "type"]);
    expect(done.outputTokens).toBe(MAX_TOKENS);
    expect(done.inputTokens).toBeGreaterThan(0);
    // One clock: from the request's arrival, so the first token comes after it and before
    // the stream's end, and the request lasts at least as long as its stream.
    expect(done.ttftMs).toBeGreaterThanOrEqual(0);
    expect(done.ttftMs!).toBeLessThanOrEqual(done.generationMs);
    expect(request.durationMs).toBeGreaterThanOrEqual(done.generationMs);

    const decision = only(gw, "pd_decision");
    expect(decision).toMatchObject({ model: MODEL, prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "prefill", decodeEngine: "decode-a" });
    expect(present(decision)).toEqual(["cluster", "connectorMode", "decodeEngine", "kvInjection", "kvTransferMs", "model", "n", "prefill", "prefillEngine", "prefillMs", "surface", "type"]);
  });

  it.each([
    ["a prompt below the threshold", { pd: { decode_only_max_prompt_tokens: 100_000 } }, 1, ["skipped", "short_prompt"]],
    ["a prompt at or above the threshold", { pd: { decode_only_max_prompt_tokens: 2 } }, 1, ["ran", undefined]],
    ["fan-out", {}, 2, ["skipped", "fanout"]],
  ] as const)("the decider, %s: the same answer on every path", async (_name, o, n, expected) => {
    const answers: Record<string, unknown> = {};
    for (const path of PATHS) {
      const gw = gatewayFor(path, o);
      expect(await call(gw, path, { n })).toEqual({ ok: true });
      await gw.settle();
      const d = only(gw, "pd_decision");
      answers[path] = [d.prefill, d.skipReason];
    }
    expect(answers).toEqual(Object.fromEntries(PATHS.map((p) => [p, expected])));
  });

  it("x-routing-key with consistent_hash: one decode engine for the key, the same on every path", async () => {
    const decodes = ["decode-a", "decode-b", "decode-c"];
    const picked: Record<string, string[]> = {};
    for (const path of PATHS) {
      const gw = gatewayFor(path, { decodes, policy: { decode: "consistent_hash" } });
      for (let i = 0; i < 5; i++) expect(await call(gw, path, { headers: { "x-routing-key": "session-42" } })).toEqual({ ok: true });
      await gw.settle();
      picked[path] = gw.metrics.ofType("pd_decision").map((d) => d.decodeEngine);
    }
    const first = picked["openai-http"]![0]!;
    expect(picked).toEqual(Object.fromEntries(PATHS.map((p) => [p, Array(5).fill(first)])));
  });
});

describe("the same failure, the same error", () => {
  it.each(PATHS)("%s: an unknown model is model_not_found (404 / NotFound), recorded once", async (path) => {
    const gw = gatewayFor(path);
    const out = await call(gw, path, { model: "no-such-model" });
    expect(out.code).toBe("model_not_found");
    expect(out.message).toContain("no-such-model");
    if (path !== "generate-connect") expect([out.status, out.param]).toEqual([404, "model"]);
    await gw.settle();
    expect(only(gw, "request")).toMatchObject({ status: 404, errorCode: "model_not_found", backend: "none" });
  });

  it.each(PATHS)("%s: a bad sampling field is a 400 invalid_request naming it", async (path) => {
    const gw = gatewayFor(path);
    const out = await call(gw, path, { badField: true });
    expect(out.code).toBe("invalid_request");
    expect(out.message).toMatch(/temperature/);
    if (path !== "generate-connect") expect([out.status, out.param]).toEqual([400, "temperature"]);
    await gw.settle();
    expect(only(gw, "request")).toMatchObject({ status: 400, errorCode: "invalid_request" });
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);
  });

  // The code is the engine kind's (docs/operations.md, "prefill engine down"): VllmEngine
  // engines report a refused connection as gRPC clients do (UNAVAILABLE, 503, upstream's
  // "worker failed to start"), OpenAI HTTP engines as a transport error (502). Whatever the
  // surface, the same engine kind gives the same answer, and the metrics record it.
  it("a prefill engine that is down: the engine kind's stable code and status on every surface, naming the engine", async () => {
    const seen: Record<string, unknown> = {};
    for (const path of PATHS) {
      const gw = gatewayFor(path, { prefillUrl: DEAD_URL });
      const out = await call(gw, path);
      expect(out.ok).toBe(false);
      expect(out.message).toContain("'prefill'");
      await gw.settle();
      const r = only(gw, "request");
      expect(r.errorCode).toBe(out.code);
      seen[path] = [r.status, out.code];
    }
    expect(seen).toEqual({
      "openai-http": [502, "prefill_request_failed"],
      "openai-connect": [503, "prefill_worker_failed_to_start"],
      "openai-grpc-web": [503, "prefill_worker_failed_to_start"],
      "generate-connect": [503, "prefill_worker_failed_to_start"],
    });
  });
});
