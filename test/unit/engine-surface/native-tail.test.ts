// generate_relay "native": the raw relay hands its leg's body on after the first whole frames
// (api/engine/native-tail.ts), over a stand-in leg in Node (a TransformStream stands in for
// workerd's IdentityTransformStream). What the client's body holds and how the relay ends:
// the engine's own end frame (clean or error) as the engine wrote it; the gateway's error end
// after a body that breaks off or ends without an end-of-stream frame; the body closed after
// one that ends inside a frame.
import { describe, expect, it, vi } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { GenerateResponseSchema, type GenerateResponse } from "../../../src/gen/vllm_engine_pb.js";
import { GatewayError } from "../../../src/core/errors.js";
import { LegFailure } from "../../../src/core/leg-transport.js";
import type { RawLeg } from "../../../src/pd/leg.js";
import { RawRelay } from "../../../src/api/engine/raw-relay.js";
import { endFrame } from "../../../src/api/engine/end-frames.js";
import { toConnectError } from "../../../src/api/engine/errors.js";
import { StreamTiming } from "../../../src/api/engine/stream-timing.js";
import { envelope } from "../../support/engine-wire.js";

const message = (m: GenerateResponse["response"]) => envelope(0, toBinary(GenerateResponseSchema, create(GenerateResponseSchema, { response: m })));
const concat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

const frames = [
  message({ case: "chunk", value: { tokenIds: [5], completionTokens: 1, promptTokens: 7 } as never }),
  message({ case: "chunk", value: { tokenIds: [6, 300], completionTokens: 2, promptTokens: 7 } as never }),
  message({ case: "complete", value: { outputIds: [6, 300], finishReason: "stop", completionTokens: 2, promptTokens: 7 } as never }),
];
const CONNECT_OK = envelope(2, new TextEncoder().encode("{}"));
const CONNECT_ERR = envelope(2, new TextEncoder().encode(JSON.stringify({ error: { code: "internal", message: "engine broke" } })));

/** A leg whose head is `head` and whose body yields `rest` (then ends, or fails with `error`,
 *  once `gate` settled). */
function leg(head: Uint8Array, rest: Uint8Array[], error?: unknown, gate?: Promise<void>): RawLeg & { how: string[] } {
  const how: string[] = [];
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i < rest.length) return c.enqueue(rest[i++]!);
      await gate;
      if (error !== undefined) c.error(error);
      else c.close();
    },
  });
  return {
    how,
    head,
    body,
    signal: new AbortController().signal,
    endFlag: 0x02,
    end: (h) => void how.push(h),
    endFailure: (payload) => {
      const parsed = JSON.parse(new TextDecoder().decode(payload)) as { error?: { message: string } };
      return parsed.error ? new LegFailure("rpc", 500, parsed.error.message) : undefined;
    },
    failure: (kind) => new LegFailure("malformed", 502, kind),
    failed(f) {
      how.push("failed");
      return new GatewayError("decode_stream_error", 502, `decode engine 'd': ${f.message}`);
    },
  };
}

/** The client's body: the relay's JS part, then (when it handed over) the native tail's. */
async function clientBody(relay: RawRelay): Promise<Uint8Array> {
  const out: Uint8Array[] = [];
  for (let b = await relay.next(); b; b = await relay.next()) out.push(b);
  if (relay.tail) {
    const pipe = new TransformStream<Uint8Array, Uint8Array>();
    const running = relay.tail.run(pipe.writable);
    const reader = pipe.readable.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value);
    await running;
  }
  return concat(...out);
}

const cuts = (bytes: Uint8Array, n: number): [Uint8Array, Uint8Array[]] => {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += n) parts.push(bytes.subarray(at, at + n));
  return [parts[0]!, parts.slice(1)];
};

const brokenEnd = (detail: string) => endFrame("connect", toConnectError(new GatewayError("decode_stream_error", 502, `decode engine 'd': ${detail}`)));

// Small chunks: with a larger one the whole stream is in the JS part (the frames relay's end).
describe.each([3, 7, 11])("native tail, the body cut into %i-byte chunks", (n) => {
  it("a clean stream: the engine's frames and its own end frame, completed, tokens counted", async () => {
    const [head, rest] = cuts(concat(...frames, CONNECT_OK), n);
    const l = leg(head, rest);
    const timing = new StreamTiming({ now: () => 10 });
    const relay = new RawRelay(l, "connect", timing, { nativeTail: true });
    expect(await clientBody(relay)).toEqual(concat(...frames, CONNECT_OK));
    expect(relay.tail).toBeDefined();
    expect(await relay.ended).toEqual({ outcome: "completed" });
    expect(l.how).toEqual(["completed"]);
    expect(timing.stats()).toMatchObject({ outputTokens: 3, inputTokens: 7 });
  });

  it("an engine's error end: passed on as the engine wrote it, no gateway end after it", async () => {
    const [head, rest] = cuts(concat(...frames, CONNECT_ERR), n);
    const l = leg(head, rest);
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true });
    expect(await clientBody(relay)).toEqual(concat(...frames, CONNECT_ERR));
    expect(await relay.ended).toMatchObject({ outcome: "failed", error: { code: "decode_stream_error" } });
    expect(l.how).toEqual(["failed"]);
  });

  it("a body that ends without an end-of-stream frame: what the engine sent, then the gateway's error end", async () => {
    const body = concat(...frames);
    const [head, rest] = cuts(body, n);
    const l = leg(head, rest);
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true });
    expect(await clientBody(relay)).toEqual(concat(body, brokenEnd("missing-end")));
    expect(await relay.ended).toMatchObject({ outcome: "failed" });
    expect(l.how).toEqual(["failed"]);
  });

  it("a body that ends inside a frame: what the engine sent, then the body closes (an end frame there would read as the frame's rest)", async () => {
    const body = concat(...frames).subarray(0, frames[0]!.length + 9);
    const [head, rest] = cuts(body, n);
    const l = leg(head, rest);
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true });
    expect(await clientBody(relay)).toEqual(body);
    expect(await relay.ended).toMatchObject({ outcome: "failed", error: { message: expect.stringContaining("incomplete") } });
    expect(l.how).toEqual(["failed"]);
  });

  it("a body that breaks off: part of what the engine sent, then the gateway's error end or (mid-frame) the close; never a clean end", async () => {
    const body = concat(...frames);
    const [head, rest] = cuts(body, n);
    const l = leg(head, rest, new TypeError("connection reset"));
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true });
    const got = await clientBody(relay);
    expect(await relay.ended).toMatchObject({ outcome: "failed", error: { message: expect.stringContaining("read") } });
    expect(l.how).toEqual(["failed"]);
    // A stream that errors drops the chunks it still held (the streams spec): the client may
    // get less of the body than the engine sent.
    const end = brokenEnd("read");
    const endsWithEnd = got.length >= end.length && got.subarray(got.length - end.length).every((v, i) => v === end[i]);
    const sent = endsWithEnd ? got.subarray(0, got.length - end.length) : got;
    expect(body.subarray(0, sent.length)).toEqual(sent);
  });

  it("the client gone (its own signal) while the leg still checks the copy, then the body breaks: recorded as the client's leaving", async () => {
    const body = concat(...frames);
    const [head, rest] = cuts(body, n);
    let breakBody!: () => void;
    const l = leg(head, rest, new TypeError("connection reset"), new Promise<void>((r) => (breakBody = r)));
    const client = new AbortController();
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true, clientSignal: client.signal });
    const reading = clientBody(relay);
    await vi.waitFor(() => expect(relay.tail).toBeDefined());
    // The leg's own signal has not fired: the leg machine waits for its check of the copy.
    client.abort();
    breakBody();
    await reading;
    expect(await relay.ended).toEqual({ outcome: "cancelled" });
    expect(l.how).toEqual(["cancelled"]);
  });

  it.each([
    ["a frame flagged compressed", envelope(1, new Uint8Array([1, 2, 3])), "compressed"],
    ["a frame declared over 16 MiB", new Uint8Array([0, 0x01, 0x00, 0x00, 0x01, 0x0a, 0x01]), "oversized"],
  ] as const)("%s: the leg fails; the client gets the frame where its decoder fails", async (_name, bad, failure) => {
    const before = concat(frames[0]!, frames[1]!);
    const body = concat(before, bad, frames[2]!, CONNECT_OK);
    const [head, rest] = cuts(body, n);
    const l = leg(head, rest);
    const relay = new RawRelay(l, "connect", new StreamTiming(), { nativeTail: true });
    const got = await clientBody(relay);
    expect(await relay.ended).toMatchObject({ outcome: "failed", error: { message: expect.stringContaining(failure) } });
    expect(l.how).toEqual(["failed"]);
    // The pipe runs ahead of the watch: the bad frame's header reached the client, which fails
    // on it (a compressed flag it did not negotiate, a length past its limit) whatever follows.
    expect(got.subarray(0, before.length + 5)).toEqual(body.subarray(0, before.length + 5));
  });
});
