// core/batch-reader.ts in workerd, where a byte stream's BYOB reader has readAtLeast: chunks
// are gathered into batches of at least the asked size (one JS step per batch), the bytes
// arrive whole and in order, and cancel reaches the stream.
import { expect, it } from "vitest";
import { batchReader } from "../../src/core/batch-reader.js";

function chunks(count: number, size: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new Uint8Array(size).fill(i % 251));
}

it("gathers many small chunks into batches of at least the asked size", async () => {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const sent = chunks(100, 1000);
  const writing = (async () => {
    for (const c of sent) await writer.write(c);
    await writer.close();
  })();
  const reader = batchReader(pipe.readable as ReadableStream<Uint8Array>, 16384);
  const sizes: number[] = [];
  const got: number[] = [];
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    sizes.push(r.value.byteLength);
    got.push(...r.value);
  }
  await writing;
  expect(got).toEqual(sent.flatMap((c) => [...c]));
  expect(sizes.length).toBeLessThanOrEqual(Math.ceil(100_000 / 16384));
  expect(sizes.slice(0, -1).every((s) => s >= 16384)).toBe(true);
});

it("a stream that is not a byte stream is read chunk by chunk", async () => {
  const sent = chunks(5, 10);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const x of sent) c.enqueue(x);
      c.close();
    },
  });
  const reader = batchReader(body, 16384);
  const sizes: number[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) sizes.push(r.value.byteLength);
  expect(sizes).toEqual([10, 10, 10, 10, 10]);
});

it("cancel reaches the stream, and a pending batch ends", async () => {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  const reader = batchReader(pipe.readable as ReadableStream<Uint8Array>, 1024);
  const pending = reader.read();
  await reader.cancel("gone");
  // workerd rejects a pending read with the reason (the spec resolves it as done): either ends it.
  expect(await pending.then((r) => String(r.done), (err: unknown) => String(err))).toMatch(/^(true|.*gone.*)$/);
  await expect(writer.write(new Uint8Array(1))).rejects.toThrow();
});
