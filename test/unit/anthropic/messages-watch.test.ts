// What the native relay's watch learns from a Messages stream read behind the client: usage,
// output timing, whether message_stop came, vLLM's in-band error, the event bound; however the
// bytes are batched.
import { describe, expect, it } from "vitest";
import { MessagesWatch, type MessagesStats } from "../../../src/api/anthropic/messages-watch.js";
import type { RelayEnding } from "../../../src/api/stream-watch.js";

const enc = new TextEncoder();
const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const START = ev("message_start", { message: { id: "m", usage: { input_tokens: 7, output_tokens: 0 } } });
const DELTA = ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "hi" } });
const END = ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { input_tokens: 7, output_tokens: 3 } }) + ev("message_stop", {});

function watch(maxEventBytes = 1 << 20) {
  let t = 0;
  const ended: { end: RelayEnding; stats: MessagesStats }[] = [];
  const w = new MessagesWatch({ leg: "decode", engine: "d0", maxEventBytes, now: () => ++t, onEnd: (end, stats) => ended.push({ end, stats }) });
  return { w, ended };
}

describe("MessagesWatch", () => {
  it("a whole stream, cut anywhere: usage, first and last output, no error at close", () => {
    const all = enc.encode(START + DELTA + DELTA + DELTA + END);
    for (const cut of [1, 17, START.length, all.length - 3]) {
      const { w } = watch();
      w.sawFirstChunk();
      expect(w.chunk(all.subarray(0, cut)).error).toBeUndefined();
      expect(w.chunk(all.subarray(cut)).error).toBeUndefined();
      expect(w.close()).toEqual({});
      expect(w.stats).toMatchObject({ firstOutputAt: 1, inputTokens: 7, outputTokens: 3 });
      expect(w.stats.lastOutputAt).toBeGreaterThan(1);
      expect(w.holding).toBe(false);
    }
  });

  it("no message_stop: close gives the decode_stream_error naming the engine", () => {
    const { w } = watch();
    w.chunk(enc.encode(START + DELTA));
    const e = w.close().error!.error;
    expect(e.code).toBe("decode_stream_error");
    expect(e.message).toContain("the stream ended before its final event");
    expect(e.message).toContain("decode engine 'd0'");
  });

  it("vLLM's in-band error event: an error with its message (the client has the event)", () => {
    const { w } = watch();
    const r = w.chunk(enc.encode(START + ev("error", { error: { type: "internal_error", message: "boom" } })));
    expect(r.error!.error.code).toBe("decode_stream_error");
    expect(r.error!.error.message).toContain("boom");
  });

  it("an event held past the bound: event_too_large; a half event is held", () => {
    const { w } = watch(64);
    expect(w.chunk(enc.encode("event: content_block_delta\ndata: {")).error).toBeUndefined();
    expect(w.holding).toBe(true);
    expect(w.chunk(enc.encode("x".repeat(100))).error!.error.code).toBe("decode_event_too_large");
  });

  it("a malformed usage event is only not counted", () => {
    const { w } = watch();
    expect(w.chunk(enc.encode("event: message_start\ndata: {not json\n\n" + END)).error).toBeUndefined();
    expect(w.close()).toEqual({});
    expect(w.stats.outputTokens).toBe(3);
  });

  it("end is told once", () => {
    const { w, ended } = watch();
    w.end({ outcome: "completed", status: 200 });
    w.end({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
    expect(ended.map((e) => e.end.outcome)).toEqual(["completed"]);
  });
});
