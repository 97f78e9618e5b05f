// core/batch-reader.ts in workerd, where a byte stream has a BYOB reader: what queued during
// each pause is taken in one read (one JS step per batch), the bytes arrive whole and in
// order, a tee()'d sibling (the client's branch) is never held back by the watch's read, and
// cancel reaches the stream.
import { expect, it } from "vitest";
import { batchReader } from "../../src/core/batch-reader.js";
import { startTestCluster } from "../support/sim.js";

function chunks(count: number, size: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new Uint8Array(size).fill(i % 251));
}

async function readAll(reader: Pick<ReturnType<typeof batchReader>, "read">): Promise<{ sizes: number[]; got: number[] }> {
  const sizes: number[] = [];
  const got: number[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    sizes.push(r.value.byteLength);
    got.push(...r.value);
  }
  return { sizes, got };
}

/** A byte stream tee()'d: its writer, the copy to read, and the client's branch drained. */
function teed() {
  const pipe = new IdentityTransformStream();
  const [client, copy] = (pipe.readable as ReadableStream<Uint8Array>).tee();
  return { copy, draining: client.pipeTo(new WritableStream()), writer: pipe.writable.getWriter() };
}

it("takes what queued during a pause in one read, never more than its buffer", async () => {
  const { copy, draining, writer } = teed();
  const sent = chunks(100, 1000);
  const reader = batchReader(copy, { maxBytes: 16384, pauseMs: 50 });
  const reading = readAll(reader);
  for (const c of sent) await writer.write(c);
  await writer.close();
  const { sizes, got } = await reading;
  await draining;
  expect(got).toEqual(sent.flatMap((c) => [...c]));
  // Written at once: far fewer reads than chunks, none past the buffer.
  expect(sizes.length).toBeLessThan(20);
  expect(Math.max(...sizes)).toBeLessThanOrEqual(16384);
});

it("starts with a small buffer and doubles it after each read that filled it, up to maxBytes", async () => {
  const { copy, draining, writer } = teed();
  const sent = chunks(60, 1000);
  const reader = batchReader(copy, { maxBytes: 16384, pauseMs: 50, firstBytes: 1024 });
  const sizes: number[] = [];
  const filled: boolean[] = [];
  const got: number[] = [];
  const reading = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      sizes.push(r.value.byteLength);
      filled.push(reader.filled);
      got.push(...r.value);
    }
  })();
  for (const c of sent) await writer.write(c);
  await writer.close();
  await reading;
  await draining;
  expect(got).toEqual(sent.flatMap((c) => [...c]));
  // All 60 000 bytes queued during the first pause: full reads of 1, 2, 4, 8, then 16 KiB.
  expect(sizes.slice(0, 5)).toEqual([1024, 2048, 4096, 8192, 16384]);
  expect(Math.max(...sizes)).toBe(16384);
  expect(filled.slice(0, 5)).toEqual([true, true, true, true, true]);
  expect(filled.at(-1)).toBe(sizes.at(-1) === 16384);
});

// The regression: the engine's body from fetch, tee()'d, its client branch piped natively into
// the response body (as the native relays do). A watch read asking for more bytes than had come
// made the source wait for them, and the client got the stream in pieces of that size.
it("never holds the client's branch back: a streamed engine body reaches it token by token", async () => {
  const cluster = await startTestCluster({ engines: [{ name: "e", role: "both", kvConnector: "none", model: "m", port: 0, latency: { perPromptTokenMs: 0.01, perOutputTokenMs: 5, perBlockPullMs: 0.01 } }] });
  try {
    const res = await fetch(`${cluster.url("e")}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", prompt: "count", max_tokens: 40, ignore_eos: true, stream: true }) });
    const [client, copy] = res.body!.tee();
    const toClient = new IdentityTransformStream();
    const piped = client.pipeTo(toClient.writable);
    const watching = readAll(batchReader(copy, { maxBytes: 65536, pauseMs: 20 }));
    const { sizes: clientReads, got } = await readAll((toClient.readable as ReadableStream<Uint8Array>).getReader());
    await piped;
    expect((await watching).got).toEqual(got);
    // About one read per token event (40 tokens, 5 ms apart); held back, one or two.
    expect(clientReads.length).toBeGreaterThan(20);
  } finally {
    await cluster.close();
  }
});

// A relay whose pipe stopped needs the copy now (did the engine's body break?), not a pause on.
it("hurry ends the pause under way and skips the later ones", async () => {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const reader = batchReader(pipe.readable as ReadableStream<Uint8Array>, { maxBytes: 1024, pauseMs: 60_000 });
  void writer.write(new Uint8Array([1, 2, 3]));
  const first = reader.read();
  reader.hurry();
  // Not hurried, these reads would wait a minute each: past the test's timeout.
  expect([...(await first).value!]).toEqual([1, 2, 3]);
  void writer.write(new Uint8Array([4]));
  expect([...(await reader.read()).value!]).toEqual([4]);
  void writer.close();
  expect((await reader.read()).done).toBe(true);
});

it("a stream that is not a byte stream is read chunk by chunk", async () => {
  const sent = chunks(5, 10);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const x of sent) c.enqueue(x);
      c.close();
    },
  });
  expect((await readAll(batchReader(body, { maxBytes: 16384, pauseMs: 1 }))).sizes).toEqual([10, 10, 10, 10, 10]);
});

it("cancel reaches the stream, and a pending batch ends", async () => {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const reader = batchReader(pipe.readable as ReadableStream<Uint8Array>, { maxBytes: 1024, pauseMs: 1 });
  const pending = reader.read();
  await new Promise((r) => setTimeout(r, 10));
  await reader.cancel("gone");
  // workerd rejects a pending read with the reason (the spec resolves it as done): either ends it.
  expect(await pending.then((r) => String(r.done), (err: unknown) => String(err))).toMatch(/^(true|.*gone.*)$/);
  await expect(writer.write(new Uint8Array(1))).rejects.toThrow();
});
