// The OpenAI HTTP transport's frames: a streamed answer's chunks as they come; a non-streamed
// answer's first frame is its head (an empty chunk), so its body can be handed over untouched
// (detach) and piped by the runtime; closing a detached body being piped is left to its pipe.
import { afterEach, describe, expect, it, vi } from "vitest";
import { openAiHttpTransport as transportVia } from "../../../src/backends/openai-http-transport.js";
import { EngineClients } from "../../../src/backends/engine-clients.js";

const openAiHttpTransport = transportVia(new EngineClients());
import type { EngineTarget } from "../../../src/core/types.js";

const engine: EngineTarget = { name: "d", url: "http://decode", transport: "openai-http" };
const payload = (stream: boolean) => ({ route: "/v1/completions" as const, text: `{"model":"m","prompt":"hi","stream":${stream}}`, body: { model: "m", prompt: "hi", stream }, stream, clientHeaders: new Headers() });
const enc = new TextEncoder();

function respondWith(chunks: string[]) {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[pulled++];
      if (next === undefined) c.close();
      else c.enqueue(enc.encode(next));
    },
  });
  vi.stubGlobal("fetch", vi.fn(async () => new Response(body, { status: 200 })));
  return { body };
}

afterEach(() => vi.unstubAllGlobals());

describe("openAiHttpTransport", () => {
  it("non-streamed decode: the first frame is the head (empty), and detach hands over the body unread", async () => {
    const r = respondWith(['{"choices":', '[{"text":"ok"}]}']);
    const call = openAiHttpTransport.start(engine, payload(false), { leg: "decode", requestId: "r1" });
    const first = await call.next();
    expect(first).toEqual({ done: false, value: new Uint8Array(0) });
    expect(r.body.locked).toBe(false); // not read: nobody took a reader
    const body = call.detach!();
    expect(body).toBe(r.body);
    expect(await new Response(body).text()).toBe('{"choices":[{"text":"ok"}]}');
  });

  it("non-streamed decode read frame by frame: the head, then the body's chunks", async () => {
    respondWith(["a", "b"]);
    const call = openAiHttpTransport.start(engine, payload(false), { leg: "decode", requestId: "r2" });
    const frames: string[] = [];
    for (let f = await call.next(); !f.done; f = await call.next()) frames.push(new TextDecoder().decode(f.value));
    expect(frames).toEqual(["", "a", "b"]);
  });

  it("streamed decode: the first frame is the first chunk; detach hands over the rest", async () => {
    respondWith(["data: 1\n\n", "data: 2\n\n"]);
    const call = openAiHttpTransport.start(engine, payload(true), { leg: "decode", requestId: "r3" });
    expect(new TextDecoder().decode((await call.next()).value)).toBe("data: 1\n\n");
    const rest = call.detach!()!.getReader();
    expect(new TextDecoder().decode((await rest.read()).value)).toBe("data: 2\n\n");
    expect((await rest.read()).done).toBe(true);
  });

  it("prefill is read to its end as chunks, never as a head frame", async () => {
    respondWith(['{"kv_transfer_params":{}}']);
    const call = openAiHttpTransport.start(engine, payload(false), { leg: "prefill", requestId: "r4" });
    expect(new TextDecoder().decode((await call.next()).value)).toBe('{"kv_transfer_params":{}}');
  });
});
