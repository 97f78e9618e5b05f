// The raw relay over a stand-in leg: what the client's body holds (whole engine frames, then
// the gateway's own end-of-stream frame) and how the relay ends, for a clean stream and for
// every way an engine body can go wrong, cut into chunks anywhere.
import { describe, expect, it } from "vitest";
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

// As the servicer streams (DELTA): chunks carry their own tokens, the complete repeats the
// last delta only. The second chunk comes after the first token: its count is read off its bytes.
const frames = [
  message({ case: "chunk", value: { tokenIds: [5], completionTokens: 1, promptTokens: 7 } as never }),
  message({ case: "chunk", value: { tokenIds: [6, 300], completionTokens: 2, promptTokens: 7 } as never }),
  message({ case: "complete", value: { outputIds: [6, 300], finishReason: "stop", completionTokens: 2, promptTokens: 7 } as never }),
];
const STREAMED_TOKENS = 3;
const CONNECT_OK = envelope(2, new TextEncoder().encode("{}"));
const CONNECT_ERR = envelope(2, new TextEncoder().encode(JSON.stringify({ error: { code: "internal", message: "engine broke" } })));

interface Ends {
  how: string[];
  failures: string[];
}

/** A leg whose head is `head` and whose body yields `rest` (then ends, or fails with `error`). */
function leg(head: Uint8Array, rest: Uint8Array[], o: { endFlag?: number; error?: unknown } = {}): RawLeg & Ends {
  const how: string[] = [];
  const failures: string[] = [];
  let i = 0;
  const stop = new AbortController();
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < rest.length) c.enqueue(rest[i++]!);
      else if (o.error !== undefined) c.error(o.error);
      else c.close();
    },
  });
  return {
    how,
    failures,
    head,
    body,
    signal: stop.signal,
    endFlag: o.endFlag ?? 0x02,
    end: (h) => void how.push(h),
    endFailure: (payload) => {
      const parsed = JSON.parse(new TextDecoder().decode(payload)) as { error?: { message: string } };
      return parsed.error ? new LegFailure("rpc", 500, parsed.error.message) : undefined;
    },
    failure: (kind) => new LegFailure("malformed", 502, kind),
    failed(f) {
      how.push("failed");
      failures.push(f.message);
      return new GatewayError("decode_stream_error", 502, `decode engine 'd': ${f.message}`);
    },
  };
}

async function drain(relay: RawRelay): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (let b = await relay.next(); b; b = await relay.next()) out.push(b);
  return out;
}

/** The body cut into `n`-byte chunks, the first one being the head. */
function cut(bytes: Uint8Array, n: number): [Uint8Array, Uint8Array[]] {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += n) parts.push(bytes.subarray(at, at + n));
  return [parts[0]!, parts.slice(1)];
}

const clean = concat(...frames, CONNECT_OK);

describe("RawRelay", () => {
  it.each([1, 2, 3, 5, 7, 11, 64, 4096])("a clean stream cut into %i-byte chunks: the frames as sent, the gateway's end, completed", async (n) => {
    const [head, rest] = cut(clean, n);
    const l = leg(head, rest);
    const timing = new StreamTiming({ now: () => 10 });
    const relay = new RawRelay(l, "connect", timing);
    const out = await drain(relay);
    expect(concat(...out)).toEqual(concat(...frames, endFrame("connect")));
    // Only whole frames go out: every piece but the last (the end) is a run of whole frames.
    let at = 0;
    const sent = concat(...out);
    for (const piece of out) {
      const view = new DataView(sent.buffer, sent.byteOffset);
      let off = at;
      while (off < at + piece.length) off += 5 + view.getUint32(off + 1);
      expect(off).toBe(at + piece.length);
      at += piece.length;
    }
    expect(await relay.ended).toEqual({ outcome: "completed" });
    expect(l.how).toEqual(["completed"]);
    expect(timing.stats()).toMatchObject({ outputTokens: STREAMED_TOKENS, inputTokens: 7, firstOutputAt: 10, lastOutputAt: 10 });
  });

  it("gRPC-web: the trailer frame (0x80) ends it, replaced by the gateway's", async () => {
    const trailer = envelope(0x80, new TextEncoder().encode("grpc-status: 0\r\n"));
    const l = leg(frames[0]!, [concat(frames[2]!, trailer)], { endFlag: 0x80 });
    const l2 = { ...l, endFailure: () => undefined };
    const out = await drain(new RawRelay(l2, "grpc-web", new StreamTiming()));
    expect(concat(...out)).toEqual(concat(frames[0]!, frames[2]!, endFrame("grpc-web")));
  });

  it.each([
    ["an error end-of-stream frame", concat(...frames.slice(1), CONNECT_ERR), undefined, "engine broke", 3],
    ["a body that ends without an end-of-stream frame", concat(...frames.slice(1)), undefined, "missing-end", 3],
    ["a body that ends inside a frame", concat(...frames.slice(1)).subarray(0, 9), undefined, "incomplete", 1],
    ["a body that ends inside the end frame", concat(...frames.slice(1), CONNECT_OK.subarray(0, 6)), undefined, "incomplete", 3],
    ["a body that breaks off", concat(...frames.slice(1)), new TypeError("connection reset"), "read", 3],
    ["a compressed frame", concat(frames[1]!, envelope(1, Uint8Array.of(1, 2)), CONNECT_OK), undefined, "compressed", 2],
    // 6 bytes declaring a ~4 GiB message: refused at its header, before anything is allocated or held.
    ["a frame declared larger than MAX_FRAME_BYTES", concat(frames[1]!, Uint8Array.of(0, 0xff, 0xff, 0xff, 0xf0, 0x12)), undefined, "oversized", 2],
    ["an end frame declared larger than MAX_FRAME_BYTES", concat(frames[1]!, Uint8Array.of(2, 0x01, 0, 0, 1, 0x7b)), undefined, "oversized", 2],
    // Whatever follows the engine's end frame does not count, however it looks.
    ["an error end frame followed by a clean one", concat(frames[1]!, frames[2]!, CONNECT_ERR, CONNECT_OK), undefined, "engine broke", 3],
  ])("%s: the whole frames before it, then the mapped error's end frame", async (_name, rest, error, failure, whole) => {
    for (const n of [1, 4, 1000]) {
      const [first, more] = cut(rest, n);
      const l = leg(frames[0]!, [first, ...more], error ? { error } : {});
      const relay = new RawRelay(l, "connect", new StreamTiming());
      const out = concat(...(await drain(relay)));
      const end = await relay.ended;
      expect(end.outcome).toBe("failed");
      expect(l.failures).toEqual([failure]);
      const sentEnd = endFrame("connect", toConnectError((end as { error: GatewayError }).error));
      expect(out.subarray(out.length - sentEnd.length)).toEqual(sentEnd);
      expect(new TextDecoder().decode(sentEnd.subarray(5))).toContain("decode_stream_error");
      // Before the end: the whole frames the engine sent before it went wrong, nothing partial.
      expect(out.subarray(0, out.length - sentEnd.length)).toEqual(concat(...frames.slice(0, whole)));
    }
  });

  it("a clean end frame followed by a compressed frame still ends clean, counted once", async () => {
    const l = leg(frames[0]!, [concat(frames[1]!, frames[2]!, CONNECT_OK, envelope(1, Uint8Array.of(1, 2)), frames[1]!)]);
    const timing = new StreamTiming();
    const relay = new RawRelay(l, "connect", timing);
    const out = concat(...(await drain(relay)));
    expect(await relay.ended).toEqual({ outcome: "completed" });
    expect(out).toEqual(concat(...frames, endFrame("connect")));
    expect(timing.stats().outputTokens).toBe(STREAMED_TOKENS);
  });

  it("a fault of its own (a leg whose failure mapping throws) is an error end, not a client that left", async () => {
    const l = leg(frames[0]!, [frames[1]!, CONNECT_ERR]);
    let calls = 0;
    const faulty = {
      ...l,
      endFailure: () => {
        throw new Error("bug");
      },
      failure: (how: Parameters<typeof l.failure>[0], cause?: unknown) => (calls++, l.failure(how, cause)),
    };
    const relay = new RawRelay(faulty, "connect", new StreamTiming());
    await drain(relay);
    expect((await relay.ended).outcome).toBe("failed");
    expect(calls).toBe(1);
  });

  it("a client that leaves: the leg is cancelled, nothing more is sent", async () => {
    const l = leg(frames[0]!, [frames[1]!, frames[2]!, CONNECT_OK]);
    const relay = new RawRelay(l, "connect", new StreamTiming());
    expect(await relay.next()).toEqual(frames[0]);
    relay.cancel();
    expect(await relay.next()).toBeUndefined();
    expect(await relay.ended).toEqual({ outcome: "cancelled" });
    expect(l.how).toEqual(["cancelled"]);
  });
});

describe("RawRelay, stopped by its leg", () => {
  it("the leg's signal (the client's request signal) ends it as cancelled without another pull", async () => {
    const stop = new AbortController();
    const l = { ...leg(frames[0]!, [frames[1]!]), signal: stop.signal };
    const relay = new RawRelay(l, "connect", new StreamTiming());
    expect(await relay.next()).toEqual(frames[0]);
    stop.abort();
    expect(await relay.ended).toEqual({ outcome: "cancelled" });
    expect(await relay.next()).toBeUndefined();
  });
});
