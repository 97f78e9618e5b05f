// A big SSE event through both relays: under the cap it passes whole; past it the client gets
// the gateway's `<leg>_event_too_large` error event naming the engine (inspecting relay), or
// the event's first bytes (they went ahead of the watch), a blank line and that error event
// (native relay); the engine's body is stopped, and the watch holds no more than the cap.
import { describe, expect, it } from "vitest";
import type { LegStream } from "../../../src/pd/leg.js";
import { sseRelay, type RelayEnd } from "../../../src/api/openai/relay.js";

const enc = new TextEncoder();
const KiB = 1024;

/** A leg that hands its body over (LegStream.detach), the body serving `steps` then, when
 *  `endless`, waiting forever (an engine still writing its event). Ending it as failed errors
 *  the body at its source, as the OpenAI HTTP transport's fetch abort does. */
function leg(steps: Uint8Array[], endless = false) {
  const state = { bodyCancelled: false, fetchAborted: false, ended: undefined as string | undefined, pulled: 0 };
  let source: ReadableStreamDefaultController<Uint8Array> | undefined;
  const l: LegStream<Uint8Array> = {
    engine: "decode-7",
    headers: () => undefined,
    next: async () => {
      const s = steps.shift();
      return s === undefined ? { done: true, value: undefined } : { done: false, value: s };
    },
    cancel: () => undefined,
    detach: () => ({
      signal: new AbortController().signal,
      body: new ReadableStream<Uint8Array>({
        start: (c) => void (source = c),
        pull(c) {
          const s = steps.shift();
          if (s === undefined && endless) return new Promise<void>(() => undefined);
          if (s === undefined) return c.close();
          state.pulled += s.length;
          c.enqueue(s);
        },
        cancel: () => void (state.bodyCancelled = true),
      }),
      end(how) {
        state.ended = how;
        if (how !== "failed") return;
        state.fetchAborted = true;
        source?.error(new Error("the fetch was aborted"));
      },
    }),
  };
  return { leg: l, state };
}

const chunk = (content: string) => enc.encode(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`);
const DONE = enc.encode("data: [DONE]\n\n");

function slices(text: string, size: number): Uint8Array[] {
  const b = enc.encode(text);
  const out: Uint8Array[] = [];
  for (let at = 0; at < b.length; at += size) out.push(b.slice(at, at + size));
  return out;
}

describe.each([false, true])("a big event (native %s)", (native) => {
  async function relay(steps: Uint8Array[], o: { endless?: boolean; maxEventBytes: number }) {
    const { leg: l, state } = leg(steps, o.endless);
    let end: RelayEnd | undefined;
    const body = await sseRelay(l, { leg: "decode", engine: l.engine!, clientSignal: new AbortController().signal, now: Date.now, onEnd: (e) => (end = e), native, maxEventBytes: o.maxEventBytes });
    const text = await new Response(body).text().catch(() => "<broken body>");
    await new Promise((r) => setTimeout(r, 10));
    return { text, end: end!, state };
  }

  it("under the cap: passed on whole", async () => {
    const big = `data: {"choices":[{"index":0,"text":"${"x".repeat(300 * KiB)}"}]}\n\n`;
    const { text, end } = await relay([chunk("a"), ...slices(big, 4 * KiB), DONE], { maxEventBytes: 512 * KiB });
    expect(text).toBe(new TextDecoder().decode(chunk("a")) + big + "data: [DONE]\n\n");
    expect(end).toMatchObject({ outcome: "completed", status: 200 });
  });

  it("past the cap, the engine still writing: the stream ends as decode_event_too_large, the engine's body cancelled", async () => {
    const endless = `data: {"choices":[{"index":0,"text":"${"x".repeat(400 * KiB)}`;
    const { text, end, state } = await relay([chunk("a"), ...slices(endless, 4 * KiB)], { endless: true, maxEventBytes: 64 * KiB });
    const error = 'data: {"error":{"message":"Decode sent an SSE event larger than 65536 bytes (bounds.max_sse_event_bytes) (decode engine \'decode-7\')","type":"server_error","param":null,"code":"decode_event_too_large"}}\n\n';
    expect(end).toMatchObject({ outcome: "failed", status: 502, errorCode: "decode_event_too_large" });
    // The inspecting relay cancels the body it reads; the native one fails the leg at the cap
    // (its fetch aborted), so its pipe ends between writes.
    expect(native ? state.fetchAborted : state.bodyCancelled).toBe(true);
    expect(state.ended).toBe("failed");
    // The inspecting relay held the event: none of it reached the client, the error event did.
    // The native pipe had sent its first bytes on ahead of the watch: a blank line ends them,
    // then the error event (the cut pipe left the client's body open).
    if (native) {
      expect(text.startsWith(new TextDecoder().decode(chunk("a")) + 'data: {"choices":[{"index":0,"text":"xxx')).toBe(true);
      expect(text.endsWith(`x\n\n${error}`)).toBe(true);
    } else expect(text).toBe(new TextDecoder().decode(chunk("a")) + error);
    // Pulled no further than the cap and a few chunks in flight.
    expect(state.pulled).toBeLessThan(64 * KiB + 64 * KiB);
  });
});
