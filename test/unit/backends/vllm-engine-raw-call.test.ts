// The fetch-framed Generate call against the connect-web one it stands in for: for the same
// engine answers (crafted responses behind a stubbed fetch) both give the same frames and the
// same LegFailure (kind, status, message, Connect code), so the leg's error handling, decode
// failover and retries cannot tell them apart. Then the raw hand-over: the first frame's own
// bytes and what was read after it, and how RawBody explains an end-of-stream payload.
import { afterEach, describe, expect, it, vi } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { GenerateRequestSchema, GenerateResponseSchema, type GenerateResponse } from "../../../src/gen/vllm_engine_pb.js";
import { rawGenerateCall } from "../../../src/backends/vllm-engine-raw-call.js";
import { vllmEngineTransport } from "../../../src/backends/vllm-engine-transport.js";
import { createVllmEngineClient } from "../../../src/backends/vllm-engine-client.js";
import { engineFetch } from "../../../src/backends/fetch.js";
import type { EngineCall } from "../../../src/core/leg-transport.js";
import type { EngineTarget } from "../../../src/core/types.js";
import { envelope } from "../../support/engine-wire.js";
import { MAX_FRAME_BYTES } from "../../../src/core/envelope.js";
import { Code } from "@connectrpc/connect";

afterEach(() => {
  vi.unstubAllGlobals();
});

const enc = new TextEncoder();
const concat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const chunkFrame = (id: number) => envelope(0, toBinary(GenerateResponseSchema, create(GenerateResponseSchema, { response: { case: "chunk", value: { tokenIds: [id] } } })));
const completeFrame = envelope(0, toBinary(GenerateResponseSchema, create(GenerateResponseSchema, { response: { case: "complete", value: { finishReason: "stop", completionTokens: 2 } } })));

const CONNECT = { "content-type": "application/connect+proto" };
const GRPC_WEB = { "content-type": "application/grpc-web+proto" };
const connectEnd = (json: unknown) => envelope(2, enc.encode(JSON.stringify(json)));
const trailer = (text: string) => envelope(0x80, enc.encode(text));

interface Answer {
  status?: number;
  headers: Record<string, string>;
  /** Body chunks; an Error ends the body with it. */
  body: (Uint8Array | Error)[];
}

function stubEngine(answer: Answer | Error) {
  vi.stubGlobal("fetch", async () => {
    if (answer instanceof Error) throw answer;
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        const next = answer.body[i++];
        if (next === undefined) c.close();
        else if (next instanceof Error) c.error(next);
        else c.enqueue(next);
      },
    });
    return new Response(body, { status: answer.status ?? 200, headers: answer.headers });
  });
}

/** Every frame until the end or a failure, as plain data. */
async function run(call: EngineCall<GenerateResponse>): Promise<unknown[]> {
  const seen: unknown[] = [];
  for (;;) {
    try {
      const r = await call.next();
      if (r.done) return [...seen, "done"];
      seen.push(r.value.response.case);
    } catch (err) {
      const f = err as { kind: string; status: number; message: string; connectCode?: number };
      return [...seen, { kind: f.kind, status: f.status, message: f.message, code: f.connectCode }];
    }
  }
}

const request = create(GenerateRequestSchema, { requestId: "r", input: { case: "text", value: "hi" }, stream: true });
const spec = { leg: "decode" as const, requestId: "r" };
const target = (transport: "connect" | "grpc-web"): EngineTarget => ({ name: "e", url: "http://engine.test", transport });
const viaConnectWeb = vllmEngineTransport((e) => createVllmEngineClient(e, engineFetch));

describe.each([
  ["connect", CONNECT, connectEnd({})],
  ["grpc-web", GRPC_WEB, trailer("grpc-status: 0\r\n")],
] as const)("over %s: the same frames and failures as connect-web's call", (transport, headers, ok) => {
  const errorEnd = transport === "connect" ? connectEnd({ error: { code: "resource_exhausted", message: "kv cache full" } }) : trailer("grpc-status: 8\r\ngrpc-message: kv%20cache%20full\r\n");
  const answers: [string, Answer | Error][] = [
    ["a clean stream", { headers, body: [concat(chunkFrame(1), chunkFrame(2)), completeFrame, ok] }],
    ["frames cut anywhere", { headers, body: [chunkFrame(1).subarray(0, 3), concat(chunkFrame(1).subarray(3), completeFrame.subarray(0, 6)), concat(completeFrame.subarray(6), ok)] }],
    ["an error end after a frame", { headers, body: [chunkFrame(1), errorEnd] }],
    ["an error end and nothing else", { headers, body: [errorEnd] }],
    ["HTTP 503", { status: 503, headers: { "content-type": "text/plain" }, body: [enc.encode("down")] }],
    ["HTTP 429", { status: 429, headers, body: [] }],
    ["a garbled message", { headers, body: [envelope(0, Uint8Array.of(0x0a, 0x7f, 1, 2)), ok] }],
    ["a frame cut short", { headers, body: [Uint8Array.of(0, 0, 0, 0, 100, 0x0a, 1, 0x61)] }],
    ["no end-of-stream", { headers, body: [chunkFrame(1)] }],
    ["a body that breaks off", { headers, body: [chunkFrame(1), new TypeError("connection reset")] }],
    ["a connection refused", new TypeError("connect ECONNREFUSED")],
  ];
  if (transport === "connect") {
    answers.push(["another content type", { headers: { "content-type": "application/json" }, body: [] }]);
    // End-of-stream JSON beside `{}` (the only one isCleanConnectEnd takes): each still as connect-web reads it.
    const ends: [string, Uint8Array][] = [
      ["an end with spaces", envelope(2, enc.encode(" { } "))],
      ["an end with metadata", connectEnd({ metadata: { "x-trailer": ["a", "b"] } })],
      ["an end with bad metadata", connectEnd({ metadata: { "x-trailer": "a" } })],
      ["an end with a null error", connectEnd({ error: null })],
      ["an end with an error and metadata", connectEnd({ error: { code: "internal", message: "boom" }, metadata: { "x-a": ["1"] } })],
      ["an end that is null", connectEnd(null)],
      ["an end that is an array", connectEnd([])],
      ["an end that is not JSON", envelope(2, enc.encode("{"))],
      ["an empty end", envelope(2, new Uint8Array(0))],
      ["an end of two other bytes", envelope(2, enc.encode("[]"))],
    ];
    for (const [name, end] of ends) answers.push([name, { headers, body: [chunkFrame(1), end] }]);
  }
  if (transport === "grpc-web") answers.push(["trailers-only", { headers: { ...headers, "grpc-status": "14", "grpc-message": "draining" }, body: [] }]);

  it.each(answers)("%s", async (_name, answer) => {
    stubEngine(answer);
    const expected = await run(viaConnectWeb.start(target(transport), request, spec));
    stubEngine(answer);
    const got = await run(rawGenerateCall(target(transport), transport, request, spec, engineFetch));
    expect(got).toEqual(expected);
    expect(got.length).toBeGreaterThan(0);
  });
});

describe("after the end-of-stream frame", () => {
  it("the engine's body is read to its end off the caller's path (the connection is released)", async () => {
    let closed = false;
    vi.stubGlobal("fetch", async () => {
      const parts = [concat(chunkFrame(1), completeFrame, connectEnd({})), enc.encode("trailing")];
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          const next = parts.shift();
          if (next) c.enqueue(next);
          else {
            closed = true;
            c.close();
          }
        },
      });
      return new Response(body, { status: 200, headers: CONNECT });
    });
    expect(await run(rawGenerateCall(target("connect"), "connect", request, spec, engineFetch))).toEqual(["chunk", "complete", "done"]);
    await new Promise((r) => setTimeout(r, 0));
    expect(closed).toBe(true);
  });
});

describe("a message declared larger than MAX_FRAME_BYTES", () => {
  it.each([
    ["connect", CONNECT],
    ["grpc-web", GRPC_WEB],
  ] as const)("%s: refused at its header (RESOURCE_EXHAUSTED), before its bytes are waited for or held", async (transport, headers) => {
    // The body never ends: a call that waited for the declared 4 GiB would hang here.
    vi.stubGlobal("fetch", async () => {
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(concat(chunkFrame(1), Uint8Array.of(0, 0xff, 0xff, 0xff, 0xf0, 0x12)));
        },
      });
      return new Response(body, { status: 200, headers });
    });
    const got = await run(rawGenerateCall(target(transport), transport, request, spec, engineFetch));
    expect(got[0]).toBe("chunk");
    expect(got[1]).toMatchObject({ code: Code.ResourceExhausted });
    expect(String((got[1] as { message: string }).message)).toContain(`larger than ${MAX_FRAME_BYTES} bytes`);
  });
});

describe("the raw hand-over", () => {
  it("after the first frame: its own bytes, then what was read with it; the rest as the body", async () => {
    stubEngine({ headers: CONNECT, body: [concat(chunkFrame(1), chunkFrame(2).subarray(0, 4)), concat(chunkFrame(2).subarray(4), completeFrame), connectEnd({})] });
    const call = rawGenerateCall(target("connect"), "connect", request, spec, engineFetch);
    expect(call.detachRaw!()).toBeUndefined(); // nothing read yet
    expect((await call.next()).done).toBe(false);
    const raw = call.detachRaw!()!;
    expect(raw.head).toEqual(concat(chunkFrame(1), chunkFrame(2).subarray(0, 4)));
    expect(raw.endFlag).toBe(0x02);
    const rest: Uint8Array[] = [];
    const reader = raw.body.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest.push(r.value);
    expect(concat(...rest)).toEqual(concat(chunkFrame(2).subarray(4), completeFrame, connectEnd({})));
    expect(call.detachRaw!()).toBeUndefined(); // once
  });

  it("not after a second frame", async () => {
    stubEngine({ headers: CONNECT, body: [chunkFrame(1), chunkFrame(2), connectEnd({})] });
    const call = rawGenerateCall(target("connect"), "connect", request, spec, engineFetch);
    await call.next();
    await call.next();
    expect(call.detachRaw!()).toBeUndefined();
  });

  it.each([
    ["connect", CONNECT, connectEnd({}), undefined],
    ["connect", CONNECT, connectEnd({ error: { code: "unavailable", message: "gone" } }), { kind: "rpc", status: 503, message: "gone" }],
    // As connect-web's "invalid end stream" maps: a broken engine.
    ["connect", CONNECT, envelope(2, enc.encode("not json")), { kind: "malformed", status: 502, message: "invalid end stream" }],
    ["grpc-web", GRPC_WEB, trailer("grpc-status: 0\r\n"), undefined],
    ["grpc-web", GRPC_WEB, trailer("grpc-status: 14\r\ngrpc-message: gone\r\n"), { kind: "rpc", status: 503, message: "gone" }],
  ] as const)("%s end-of-stream payloads are explained as the call would have (%#)", async (transport, headers, end, failure) => {
    stubEngine({ headers, body: [chunkFrame(1), completeFrame] });
    const call = rawGenerateCall(target(transport), transport, request, spec, engineFetch);
    await call.next();
    const raw = call.detachRaw!()!;
    const f = raw.endFailure(end.subarray(5));
    if (failure === undefined) expect(f).toBeUndefined();
    else expect(f).toMatchObject(failure);
  });
});
