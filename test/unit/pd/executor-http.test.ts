// The executor over the OpenAI HTTP transport against a fake fetch: every branch of
// pd-reference 6 that a real engine rarely shows (a body that breaks after its head, a
// transport error on either leg).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MemorySink } from "../../../src/metrics/events.js";
import { runAttempt } from "../../../src/pd/executor.js";
import type { LegStream } from "../../../src/pd/leg.js";
import type { PdOverride } from "../../../src/pd/plan.js";
import { GatewayError, UpstreamStatusError } from "../../../src/core/errors.js";
import { EngineLoads } from "../../../src/core/in-flight.js";
import { connectorMode, type EngineKvMeta } from "../../../src/pd/connector.js";
import { openAiHttpTransport as transportVia } from "../../../src/backends/openai-http-transport.js";
import { EngineClients } from "../../../src/backends/engine-clients.js";

const openAiHttpTransport = transportVia(new EngineClients());
import type { OpenAiRoute } from "../../../src/backends/openai-bodies.js";
import { STALE_CONNECTION_RETRIES } from "../../../src/backends/fetch.js";
import { fanoutWidth } from "../../../src/api/openai/request.js";
import { testJob } from "../../support/job.js";

interface HttpLeg {
  name: string;
  url: string;
  meta: EngineKvMeta;
}

interface HttpPdInput {
  route: OpenAiRoute;
  clientText: string;
  body: Record<string, unknown>;
  requestId: string;
  model: string;
  prefill: HttpLeg;
  decode: HttpLeg;
  clientSignal: AbortSignal;
  waitUntil(p: Promise<unknown>): void;
  deferredAbortMaxMs: number;
  mintTransferId(): string;
  override?: PdOverride;
  onDecision?(skipped: boolean): void;
  events: MemorySink;
  /** Told when the prefill leg's body has been read to its end. */
  onPrefillDrained?(): void;
}

/** One attempt of the executor over the HTTP transport, outcomes recorded as events (as
 *  routing's reporter does). */
async function runHttpSequentialPd(inp: HttpPdInput) {
  const target = (l: HttpLeg) => ({ target: { name: l.name, url: l.url, transport: "openai-http" }, meta: l.meta });
  const transport: typeof openAiHttpTransport = {
    ...openAiHttpTransport,
    start(engine, payload, spec) {
      const call = openAiHttpTransport.start(engine, payload, spec);
      if (spec.leg !== "prefill" || !inp.onPrefillDrained) return call;
      return {
        ...call,
        async next() {
          const r = await call.next();
          if (r.done) inp.onPrefillDrained!();
          return r;
        },
      };
    },
  };
  return runAttempt(
    transport,
    testJob({
      model: inp.model,
      surface: "openai",
      endpoint: inp.route,
      payload: { route: inp.route, text: inp.clientText, body: inp.body, stream: inp.body.stream === true, clientHeaders: new Headers() },
      fanout: fanoutWidth(inp.route, inp.body),
      override: inp.override,
      streamed: inp.body.stream === true,
    }),
    { prefill: target(inp.prefill), decode: target(inp.decode), hasEncodeAssignments: false },
    inp.requestId,
    {
      model: inp.model,
      clientSignal: inp.clientSignal,
      waitUntil: inp.waitUntil,
      loads: new EngineLoads(),
      outcomes: { report: (e, leg, status) => inp.events.emit({ type: "engine_outcome", model: inp.model, engine: e.name, leg, status }) },
      events: inp.events,
      timeouts: { prefillTimeoutMs: 60_000, firstFrameTimeoutMs: 60_000, deferredAbortMaxMs: inp.deferredAbortMaxMs },
      mintTransferId: inp.mintTransferId,
      onDecision: (reason) => inp.onDecision?.(reason !== undefined),
    },
  );
}

async function readAll(stream: LegStream<Uint8Array>): Promise<string> {
  let out = "";
  const dec = new TextDecoder();
  for (let r = await stream.next(); !r.done; r = await stream.next()) out += dec.decode(r.value, { stream: true });
  return out;
}

interface Call {
  url: string;
  body: string;
  headers: Headers;
  signal: AbortSignal;
}
type Handler = (call: Call) => Response | Promise<Response>;

let calls: Call[];
let handlers: { prefill: Handler; decode: Handler };

beforeEach(() => {
  calls = [];
  handlers = { prefill: () => json(200, PREFILL_OK), decode: () => json(200, DECODE_OK) };
  vi.stubGlobal("fetch", async (input: string, init: RequestInit) => {
    const call = { url: input, body: init.body as string, headers: new Headers(init.headers), signal: init.signal! };
    calls.push(call);
    if (call.signal.aborted) throw new DOMException("aborted", "AbortError");
    return (input.startsWith("http://prefill") ? handlers.prefill : handlers.decode)(call);
  });
});
afterEach(() => vi.unstubAllGlobals());

const HANDOFF = '{"do_remote_prefill": true, "remote_block_ids": [1, 2], "remote_host": "10.0.0.1"}';
const PREFILL_OK = `{"id":"x","choices":[{"index":0,"text":"a"}],"kv_transfer_params":${HANDOFF}}`;
const DECODE_OK = '{"id":"y","choices":[{"index":0,"text":"hello"}],"kv_transfer_params":null}';

function json(status: number, text: string): Response {
  return new Response(text, { status, headers: { "content-type": "application/json" } });
}
/** A 200 whose body breaks after `prefix`. */
function broken(prefix: string): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(prefix));
        c.error(new TypeError("Network connection lost"));
      },
    }),
    { status: 200 },
  );
}

const meta = (kvConnector?: string, extra: Partial<EngineKvMeta> = {}): EngineKvMeta => ({ bootstrapHost: "10.0.0.1", ...(kvConnector ? { kvConnector } : {}), ...extra });

function input(body: Record<string, unknown>, o: Partial<HttpPdInput> = {}): HttpPdInput & { events: MemorySink } {
  const text = JSON.stringify(body);
  return {
    route: "/v1/completions",
    clientText: text,
    body,
    requestId: "rid-1",
    model: "m",
    prefill: { name: "p", url: "http://prefill", meta: meta("NixlConnector") },
    decode: { name: "d", url: "http://decode", meta: meta() },
    clientSignal: new AbortController().signal,
    waitUntil: () => undefined,
    deferredAbortMaxMs: 1_000,
    mintTransferId: () => "xfer-1",
    ...o,
    events: new MemorySink(),
  } as HttpPdInput & { events: MemorySink };
}

async function failure(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a GatewayError");
}


describe("n=1 relay", () => {
  it("NIXL: sanitised tagged prefill, decode gets the client's bytes plus the harvested params verbatim", async () => {
    const inp = input({ model: "m", prompt: "hi", max_tokens: 8, min_tokens: 2, stream: true, stream_options: { include_usage: true }, extra: [1] });
    const r = await runHttpSequentialPd(inp);
    expect(r.prefill).toBe("ran");
    expect(await readAll(r.stream)).toBe(DECODE_OK);
    const [p, d] = calls;
    expect(p!.url).toBe("http://prefill/v1/completions");
    expect(JSON.parse(p!.body)).toEqual({ model: "m", prompt: "hi", max_tokens: 1, ignore_eos: true, stream: false, extra: [1], kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } });
    expect(d!.url).toBe("http://decode/v1/completions");
    expect(d!.body).toBe(`{"kv_transfer_params":${HANDOFF},${inp.clientText.slice(1)}`);
    expect([p!.headers.get("x-request-id"), d!.headers.get("x-request-id")]).toEqual(["rid-1", "rid-1"]);
    const ev = inp.events.events;
    expect(ev.map((e) => e.type)).toEqual(["engine_outcome", "engine_outcome", "pd_decision"]);
    expect(ev[2]).toMatchObject({ connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, surface: "openai" });
    expect((ev[2] as { prefillMs?: number }).prefillMs).toBeGreaterThanOrEqual(0);
    expect((ev[2] as { kvTransferMs?: number }).kvTransferMs).toBeGreaterThanOrEqual(0); // relayed: timed
  });

  it("Mooncake with an engine id: 3-key prefill tag, 5-key decode params with the same transfer id", async () => {
    handlers.prefill = () => json(200, '{"kv_transfer_params":{"ignored":true}}');
    const inp = input({ model: "m", prompt: "hi" }, { prefill: { name: "p", url: "http://prefill", meta: meta("MooncakeConnector", { kvEngineId: "eng", bootstrapPort: 9000 }) } });
    await runHttpSequentialPd(inp);
    expect(JSON.parse(calls[0]!.body).kv_transfer_params).toEqual({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-1" });
    expect(JSON.parse(calls[1]!.body).kv_transfer_params).toEqual({
      do_remote_decode: false, do_remote_prefill: true, transfer_id: "xfer-1", remote_engine_id: "eng", remote_bootstrap_addr: "http://10.0.0.1:9000",
    });
    expect(inp.events.events.at(-1)).toMatchObject({ connectorMode: "mooncake", kvInjection: "minted" });
  });

  it("Mooncake without an engine id: untagged prefill, no decode params (no HTTP form)", async () => {
    const inp = input({ model: "m", prompt: "hi" }, { prefill: { name: "p", url: "http://prefill", meta: meta("MooncakeConnector") } });
    await runHttpSequentialPd(inp);
    expect(JSON.parse(calls[0]!.body).kv_transfer_params).toBeUndefined();
    expect(calls[1]!.body).toBe(inp.clientText);
    expect(inp.events.events.at(-1)).toMatchObject({ kvInjection: "none" });
  });

  it.each([
    ["passthrough, params returned -> relayed", undefined, PREFILL_OK, "relayed", 0],
    ["passthrough, none returned -> nothing, no failure", undefined, '{"kv_transfer_params":null}', "none", 0],
    ["NIXL, none returned -> kv_transfer_failure", "NixlConnector", '{"choices":[]}', "none", 1],
  ])("%s", async (_name, connector, prefillBody, injection, failures) => {
    handlers.prefill = () => json(200, prefillBody);
    const inp = input({ model: "m", prompt: "hi" }, { prefill: { name: "p", url: "http://prefill", meta: meta(connector) } });
    await runHttpSequentialPd(inp);
    if (!connector) expect(JSON.parse(calls[0]!.body).kv_transfer_params).toBeUndefined();
    expect(inp.events.events.filter((e) => e.type === "kv_transfer_failure")).toHaveLength(failures);
    expect(inp.events.events.at(-1)).toMatchObject({ kvInjection: injection });
  });

  it("a client's own kv_transfer_params never reach either engine", async () => {
    handlers.prefill = () => json(200, "{}");
    const inp = input({ model: "m", prompt: "hi", kv_transfer_params: { do_remote_prefill: true, remote_host: "10.9.9.9" } }, { prefill: { name: "p", url: "http://prefill", meta: meta() } });
    await runHttpSequentialPd(inp);
    expect(JSON.parse(calls[0]!.body).kv_transfer_params).toBeUndefined();
    expect(JSON.parse(calls[1]!.body).kv_transfer_params).toBeUndefined();
  });
});

describe("fan-out skip (decision 1, T24)", () => {
  it.each([
    ["n=3", { model: "m", prompt: "hi", n: 3 }],
    ["a batch of two prompts", { model: "m", prompt: ["a", "b"] }],
  ])("%s: no prefill POST, decode gets the client's bytes unchanged", async (_name, body) => {
    const decided: boolean[] = [];
    const inp = input(body, { onDecision: (s) => decided.push(s) });
    const r = await runHttpSequentialPd(inp);
    expect(r.prefill).toBe("skipped");
    expect(decided).toEqual([true]);
    expect(calls.map((c) => c.url)).toEqual(["http://decode/v1/completions"]);
    expect(calls[0]!.body).toBe(inp.clientText);
    const ev = inp.events.events;
    expect(ev.map((e) => e.type)).toEqual(["engine_outcome", "pd_decision"]);
    expect(ev[1]).toMatchObject({ prefill: "skipped", skipReason: "fanout", kvInjection: "none" });
    expect(ev[1]).not.toHaveProperty("prefillMs");
  });

  it("force-prefill runs the leg for n=3 without relaying; force-relay also relays", async () => {
    const forced = input({ model: "m", prompt: "hi", n: 3 }, { override: "force-prefill" });
    expect((await runHttpSequentialPd(forced)).prefill).toBe("ran");
    expect(JSON.parse(calls[0]!.body)).toMatchObject({ n: 1 });
    expect(JSON.parse(calls[0]!.body).kv_transfer_params).toBeUndefined();
    expect(JSON.parse(calls[1]!.body).kv_transfer_params).toBeUndefined();
    calls = [];
    const relayed = input({ model: "m", prompt: "hi", n: 3 }, { override: "force-relay" });
    await runHttpSequentialPd(relayed);
    expect(JSON.parse(calls[0]!.body).kv_transfer_params).toEqual({ do_remote_decode: true, do_remote_prefill: false });
    expect(JSON.parse(calls[1]!.body)).toMatchObject({ n: 3, kv_transfer_params: JSON.parse(HANDOFF) });
  });
});

describe("errors (pd-reference 6)", () => {
  it.each([
    ["prefill transport error", () => { handlers.prefill = () => { throw new TypeError("connect ECONNREFUSED"); }; }, "prefill_request_failed", 502, "Prefill transport error: connect ECONNREFUSED (prefill engine 'p')", 1],
    ["prefill 429", () => { handlers.prefill = () => json(429, '{"error":{"message":"slow down","code":429}}'); }, "prefill_upstream_error", 429, "slow down (prefill engine 'p')", 1],
    ["prefill 503 plain text", () => { handlers.prefill = () => new Response("overloaded", { status: 503 }); }, "prefill_upstream_error", 503, "overloaded (prefill engine 'p')", 1],
    ["prefill body breaks", () => { handlers.prefill = () => broken('{"kv_trans'); }, "prefill_read_failed", 502, undefined, 1],
    // A lost connection is re-sent on another one (src/backends/fetch.ts) before it counts.
    ["decode transport error", () => { handlers.decode = () => { throw new TypeError("Network connection lost"); }; }, "decode_request_failed", 502, "Decode transport error: Network connection lost (decode engine 'd')", 1 + 1 + STALE_CONNECTION_RETRIES],
    ["decode 400", () => { handlers.decode = () => json(400, '{"error":{"message":"bad"}}'); }, "decode_bad_request", 400, "bad (decode engine 'd')", 2],
    ["decode 404", () => { handlers.decode = () => json(404, '{"message":"no such model"}'); }, "decode_not_found", 404, "no such model (decode engine 'd')", 2],
    ["decode 500", () => { handlers.decode = () => json(500, "{}"); }, "decode_internal_error", 500, "{} (decode engine 'd')", 2],
    ["decode 502", () => { handlers.decode = () => json(502, "bad gateway"); }, "decode_bad_gateway", 502, "bad gateway (decode engine 'd')", 2],
    ["decode 503", () => { handlers.decode = () => json(503, '{"error":{"message":"down"}}'); }, "decode_unavailable", 503, "down (decode engine 'd')", 2],
    ["decode 429", () => { handlers.decode = () => json(429, '{"error":{"message":"later"}}'); }, "decode_error", 500, "later (decode engine 'd')", 2],
  ])("%s", async (_name, setup, code, status, message, contacted) => {
    setup();
    const inp = input({ model: "m", prompt: "hi" });
    const e = await failure(runHttpSequentialPd(inp));
    expect([e.code, e.status]).toEqual([code, status]);
    if (message) expect(e.message).toBe(message);
    expect(e instanceof UpstreamStatusError).toBe(code.startsWith("decode_") && code !== "decode_request_failed");
    expect(calls).toHaveLength(contacted);
    expect(inp.events.events.filter((x) => x.type === "pd_decision")).toHaveLength(0);
    const outcomes = inp.events.events.filter((x) => x.type === "engine_outcome").map((x) => [x.leg, x.status]);
    expect(outcomes.at(-1)![0]).toBe(contacted === 1 ? "prefill" : "decode");
  });
});

describe("client disconnects", () => {
  it("during prefill: the prefill fetch is cancelled, decode never sent, 499", async () => {
    const client = new AbortController();
    handlers.prefill = (call) =>
      new Promise<Response>((_resolve, reject) => {
        call.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
        client.abort();
      });
    const inp = input({ model: "m", prompt: "hi" }, { clientSignal: client.signal });
    const e = await failure(runHttpSequentialPd(inp));
    expect([e.code, e.status]).toEqual(["client_cancelled", 499]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.signal.aborted).toBe(true);
    expect(inp.events.events).toEqual([]);
  });

  it("after prefill returned a handoff: decode is still sent, and closed only after its first chunk", async () => {
    const client = new AbortController();
    const tasks: Promise<unknown>[] = [];
    let firstChunk!: (v: string) => void;
    handlers.prefill = () => json(200, PREFILL_OK);
    handlers.decode = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          async pull(c) {
            c.enqueue(new TextEncoder().encode(await new Promise<string>((r) => (firstChunk = r))));
          },
        }),
        { status: 200 },
      );
    // The client leaves the moment prefill's answer has been read. Streamed: decode's first
    // frame is its first chunk (a non-streamed answer's first frame is its head, which vLLM
    // sends with the finished answer).
    const inp = input({ model: "m", prompt: "hi", stream: true }, { clientSignal: client.signal, waitUntil: (p) => tasks.push(p), onPrefillDrained: () => client.abort() });
    const e = await failure(runHttpSequentialPd(inp));
    expect(e.code).toBe("client_cancelled");
    expect(calls).toHaveLength(2);
    expect(calls[1]!.body).toContain('"kv_transfer_params"');
    await new Promise((r) => setTimeout(r, 20));
    expect(calls[1]!.signal.aborted).toBe(false); // still pulling the handoff
    firstChunk("data: {}\n\n");
    await Promise.all(tasks);
    expect(calls[1]!.signal.aborted).toBe(true);
  });

  it("after a skipped prefill: nothing is sent at all", async () => {
    const client = new AbortController();
    client.abort();
    const e = await failure(runHttpSequentialPd(input({ model: "m", prompt: "hi", n: 2 }, { clientSignal: client.signal })));
    expect(e.code).toBe("client_cancelled");
    expect(calls).toHaveLength(0);
  });
});

it("connector mode comes from the prefill engine's config entry", () => {
  expect(connectorMode(meta("NixlConnector")).kind).toBe("nixl");
});
