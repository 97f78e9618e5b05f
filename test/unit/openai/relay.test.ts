// The SSE relay against a scripted engine leg: bytes pass through as they complete, and every
// way a stream can fail mid-way ends in one gateway error event.
import { describe, expect, it } from "vitest";
import type { LegStream } from "../../../src/pd/leg.js";
import { sseRelay, type RelayEnd } from "../../../src/api/openai/relay.js";
import { CATCH_UP_MS } from "../../../src/core/watched-copy.js";

type Step = string | Error;
/** pulled: the leg cannot hand its stream over, so the relay pulls it through next(); piped: the leg hands its stream over
 *  after the first frame (LegStream.detach) and the relay pipes it. Every case runs both. */
type Mode = "pulled" | "piped";

/** endless: after its steps the body waits for a pull it never answers (an engine still generating). */
function scriptedLeg(steps: Step[], mode: Mode, o: { endless?: boolean } = {}) {
  const enc = new TextEncoder();
  // cancel() (or end("cancelled")) is the leg's one "stop now"; a failed relay closes it.
  const state = { closed: false, gone: false, bodyCancelled: false, ended: undefined as string | undefined };
  const leg: LegStream<Uint8Array> = {
    headers: () => undefined,
    async next() {
      const s = steps.shift();
      if (s === undefined) return { done: true, value: undefined };
      if (s instanceof Error) throw s;
      return { done: false, value: enc.encode(s) };
    },
    cancel: () => void (state.closed = state.gone = true),
    ...(mode === "piped"
      ? {
          detach: () => ({
            signal: new AbortController().signal,
            body: new ReadableStream<Uint8Array>({
              pull(c) {
                const s = steps.shift();
                if (s === undefined && o.endless) return new Promise<void>(() => undefined);
                if (s === undefined) c.close();
                else if (s instanceof Error) c.error(s);
                else c.enqueue(enc.encode(s));
              },
              cancel: () => void (state.bodyCancelled = true),
            }),
            end(how: "completed" | "failed" | "cancelled") {
              state.ended = how;
              if (how !== "completed") state.closed = true;
              if (how === "cancelled") state.gone = true;
            },
          }),
        }
      : {}),
  };
  return { leg, state };
}

const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 2 } })}\n\n`;

describe.each(["pulled", "piped"] as const)("sseRelay (%s)", (mode) => {
  async function run(steps: Step[], signal = new AbortController().signal) {
    const { leg, state } = scriptedLeg(steps, mode);
    let end: RelayEnd | undefined;
    let t = 100;
    const stream = await sseRelay(leg, { leg: "decode", clientSignal: signal, now: () => (t += 10), onEnd: (e) => (end = e) });
    const text = await new Response(stream).text();
    return { text, end: end!, state };
  }

  it("passes a normal stream through byte for byte, split anywhere", async () => {
    const all = chunk("a") + chunk("b") + USAGE + "data: [DONE]\n\n";
    const { text, end, state } = await run([all.slice(0, 7), all.slice(7, 50), all.slice(50)]);
    expect(text).toBe(all);
    expect(end).toMatchObject({ outcome: "completed", status: 200 });
    expect(end.stats).toMatchObject({ firstEventAt: 110, outputPieces: 2, usage: { promptTokens: 4, completionTokens: 2 } });
    if (mode === "piped") expect(state.ended).toBe("completed");
  });

  it("replaces an engine's in-band error event with the gateway's, then closes", async () => {
    const err = `data: ${JSON.stringify({ error: { message: "mid", type: "InternalServerError", param: null, code: 500 } })}\n\n`;
    const { text, end, state } = await run([chunk("a") + err + "data: [DONE]\n\n"]);
    expect(text).toBe(`${chunk("a")}data: {"error":{"message":"mid","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end).toMatchObject({ outcome: "failed", status: 500, errorCode: "decode_stream_error" });
    expect(state.closed).toBe(true);
  });

  it("an in-band error split across chunks is still found and replaced", async () => {
    const err = `data: ${JSON.stringify({ error: { message: "split", code: 503 } })}\n\n`;
    const all = chunk("a") + err;
    const at = chunk("a").length + 12;
    const { text, end } = await run([all.slice(0, at), all.slice(at), "data: [DONE]\n\n"]);
    expect(text).toBe(`${chunk("a")}data: {"error":{"message":"split","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end).toMatchObject({ outcome: "failed", status: 503 });
  });

  it("counts output without usage from the bytes, and takes usage when sent", async () => {
    const noUsage = await run([chunk("a") + chunk("b") + chunk("c"), "data: [DONE]\n\n"]);
    expect(noUsage.end.stats).toMatchObject({ firstEventAt: 110, outputPieces: 3 });
    expect(noUsage.end.stats.usage).toBeUndefined();
  });

  it("a broken connection ends with one error event", async () => {
    const { text, end } = await run([chunk("a"), new TypeError("Network connection lost")]);
    expect(text).toBe(`${chunk("a")}data: {"error":{"message":"Decode stream error: Network connection lost","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end).toMatchObject({ outcome: "failed", status: 502 });
  });

  it("an end without [DONE] is a failure, and the fragment is dropped", async () => {
    const { text, end } = await run([chunk("a"), 'data: {"choi']);
    expect(text).toBe(`${chunk("a")}data: {"error":{"message":"Decode stream ended before [DONE]","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end.outcome).toBe("failed");
  });

  it("a read failure after the client left is a cancel, not an error event", async () => {
    const client = new AbortController();
    client.abort();
    const { text, end } = await run([new Error("aborted")], client.signal);
    expect(text).toBe("");
    expect(end).toMatchObject({ outcome: "cancelled", status: 499, errorCode: "client_cancelled" });
  });

  it("a client cancel tells the leg the client is gone", async () => {
    const { leg, state } = scriptedLeg([chunk("a"), chunk("b"), chunk("c")], mode);
    let end: RelayEnd | undefined;
    const reader = (await sseRelay(leg, { leg: "engine", clientSignal: new AbortController().signal, now: Date.now, onEnd: (e) => (end = e) })).getReader();
    await reader.read();
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 0)); // the pipe learns of the cancel
    expect(state.gone).toBe(true);
    expect(end).toMatchObject({ outcome: "cancelled", status: 499 });
  });
});

// sse_relay: "native": the engine's body goes to the client as it is, and a copy is watched
// behind it: tokens, usage and how it ended are still known, but what the client already has
// cannot be taken back or added to.
describe("sseRelay (native)", () => {
  async function runNative(steps: Step[], signal = new AbortController().signal) {
    const { leg, state } = scriptedLeg(steps, "piped");
    let end: RelayEnd | undefined;
    let t = 100;
    const stream = await sseRelay(leg, { leg: "decode", clientSignal: signal, now: () => (t += 10), onEnd: (e) => (end = e), native: true });
    const text = await new Response(stream).text().catch(() => "<broken body>");
    await new Promise((r) => setTimeout(r, 0));
    return { text, end: end!, state };
  }
  const DONE = "data: [DONE]\n\n";

  it("passes the bytes through untouched, and still counts the tokens and takes the usage", async () => {
    const all = chunk("a") + chunk("b") + chunk("c") + USAGE + DONE;
    const { text, end, state } = await runNative([all.slice(0, 9), all.slice(9, 80), all.slice(80)]);
    expect(text).toBe(all);
    expect(end).toMatchObject({ outcome: "completed", status: 200 });
    expect(end.stats).toMatchObject({ firstEventAt: 110, outputPieces: 3, usage: { promptTokens: 4, completionTokens: 2 } });
    expect(end.stats.lastEventAt).toBeGreaterThan(110);
    expect(state.ended).toBe("completed");
  });

  it("an engine's in-band error event reaches the client as vLLM wrote it; the stream is a failure", async () => {
    const err = `data: ${JSON.stringify({ error: { message: "mid", code: 503 } })}\n\n`;
    const all = chunk("a") + err + DONE;
    const { text, end, state } = await runNative([all.slice(0, 30), all.slice(30)]);
    expect(text).toBe(all);
    expect(end).toMatchObject({ outcome: "failed", status: 503, errorCode: "decode_stream_error" });
    expect(state.ended).toBe("failed");
  });

  it("an end without [DONE] gets the gateway's error event", async () => {
    const { text, end, state } = await runNative([chunk("a"), chunk("b")]);
    expect(text).toBe(`${chunk("a")}${chunk("b")}data: {"error":{"message":"Decode stream ended before [DONE]","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end).toMatchObject({ outcome: "failed", status: 502, errorCode: "decode_stream_error" });
    expect(state.ended).toBe("failed");
  });

  it("a half-sent event is ended by a blank line before the gateway's error event", async () => {
    const { text, end } = await runNative([chunk("a"), 'data: {"choi']);
    expect(text).toBe(`${chunk("a")}data: {"choi\n\ndata: {"error":{"message":"Decode stream ended before [DONE]","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`);
    expect(end.outcome).toBe("failed");
  });

  it("a body that breaks off gets the gateway's error event naming the engine (the pipe leaves the client's body open)", async () => {
    const { text, end, state } = await runNative([chunk("a"), chunk("b"), new TypeError("Network connection lost")]);
    // What the tee had queued but not yet piped is lost with the body (the streams spec drops an
    // errored stream's queue); what the client has is followed by a blank line and the event.
    expect(text.startsWith(chunk("a"))).toBe(true);
    expect(text.endsWith(`\n\ndata: {"error":{"message":"Decode stream error: Network connection lost","type":"server_error","param":null,"code":"decode_stream_error"}}\n\n`)).toBe(true);
    expect(end).toMatchObject({ outcome: "failed", status: 502, errorCode: "decode_stream_error" });
    expect(state.ended).toBe("failed");
  });

  it("a client that was gone before the pipe started: nothing relayed, the engine's body cancelled", async () => {
    const client = new AbortController();
    client.abort();
    const { text, end, state } = await runNative([chunk("a"), chunk("b")], client.signal);
    expect(text).toBe("");
    expect(state.bodyCancelled).toBe(true);
    expect(end).toMatchObject({ outcome: "cancelled", status: 499 });
  });

  it("a client body cancelled before its first chunk was taken: the engine's body is cancelled", async () => {
    const { leg, state } = scriptedLeg([chunk("a"), chunk("b")], "piped", { endless: true });
    let end: RelayEnd | undefined;
    const body = await sseRelay(leg, { leg: "engine", clientSignal: new AbortController().signal, now: Date.now, onEnd: (e) => (end = e), native: true });
    await body.cancel();
    // Nothing says the client left but the stopped pipe: the relay waits up to CATCH_UP_MS for
    // the copy to show a broken engine body before it takes the stop for the client's going.
    await new Promise((r) => setTimeout(r, CATCH_UP_MS + 20));
    expect(state.bodyCancelled).toBe(true);
    expect(state.ended).toBe("cancelled");
    expect(end).toMatchObject({ outcome: "cancelled", status: 499 });
  });

  it("after the client left, the engine's body is cancelled and the leg is told the client is gone", async () => {
    const client = new AbortController();
    const { leg, state } = scriptedLeg([chunk("a"), chunk("b"), chunk("c"), chunk("d")], "piped", { endless: true });
    let end: RelayEnd | undefined;
    const reader = (await sseRelay(leg, { leg: "engine", clientSignal: client.signal, now: Date.now, onEnd: (e) => (end = e), native: true })).getReader();
    await reader.read();
    client.abort();
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 10));
    expect(state.bodyCancelled).toBe(true);
    expect(state.gone).toBe(true);
    expect(end).toMatchObject({ outcome: "cancelled", status: 499 });
  });
});
