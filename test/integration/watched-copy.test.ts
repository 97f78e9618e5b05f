// core/watched-copy.ts in workerd: the copy both native relays read behind the client. A copy
// that breaks with the engine's body says so; one the relay stopped does not (its pending read
// rejects with the cancel's reason in workerd); `see` returning false stops the watch while
// the client's branch goes on; caughtUpNow settles once what had queued was seen.
import { expect, it } from "vitest";
import { WatchedCopy } from "../../src/core/watched-copy.js";

const LONG_PAUSE = { maxBytes: 1024, pauseMs: 60_000 };

function engine() {
  const pipe = new IdentityTransformStream();
  return { body: pipe.readable as ReadableStream<Uint8Array>, writer: pipe.writable.getWriter() };
}

it("a body that breaks: the copy says it broke", async () => {
  const e = engine();
  const seen: number[] = [];
  const [client, copy] = WatchedCopy.tee(e.body, (b) => (seen.push(...b), true), { maxBytes: 1024, pauseMs: 1 });
  const draining = client.pipeTo(new WritableStream()).catch(() => "client broke");
  await e.writer.write(Uint8Array.of(1, 2));
  await new Promise((r) => setTimeout(r, 20));
  await e.writer.abort(new Error("connection reset"));
  await copy.watching;
  expect(String(copy.broke?.err)).toContain("connection reset");
  expect(seen).toEqual([1, 2]);
  expect(await draining).toBe("client broke");
});

it("a copy stopped by the relay did not break, though its pending read ends in an error", async () => {
  const e = engine();
  const [client, copy] = WatchedCopy.tee(e.body, () => true, LONG_PAUSE);
  void client.pipeTo(new WritableStream()).catch(() => undefined);
  copy.hurry(); // a read is pending now, not a pause
  await new Promise((r) => setTimeout(r, 10));
  copy.stop();
  await copy.watching;
  expect(copy.broke).toBeUndefined();
  await e.writer.close().catch(() => undefined);
});

it("see returning false stops the watch; the client's branch still gets everything", async () => {
  const e = engine();
  let looks = 0;
  const [client, copy] = WatchedCopy.tee(e.body, () => (looks++, false), { maxBytes: 1024, pauseMs: 1 });
  const got: number[] = [];
  const reading = client.pipeTo(new WritableStream({ write: (c: Uint8Array) => void got.push(...c) }));
  await e.writer.write(Uint8Array.of(1));
  await copy.watching;
  await e.writer.write(Uint8Array.of(2));
  await e.writer.write(Uint8Array.of(3));
  await e.writer.close();
  await reading;
  expect(looks).toBe(1);
  expect(got).toEqual([1, 2, 3]);
  expect(copy.broke).toBeUndefined();
});

it("caughtUpNow: hurried through what queued, it settles once that was seen (not a minute's pause later)", async () => {
  const e = engine();
  const seen: number[] = [];
  const [client, copy] = WatchedCopy.tee(e.body, (b) => (seen.push(...b), true), LONG_PAUSE);
  void client.pipeTo(new WritableStream()).catch(() => undefined);
  await e.writer.write(Uint8Array.of(7, 8, 9));
  await copy.caughtUpNow();
  expect(seen).toEqual([7, 8, 9]);
  copy.stop();
  await e.writer.close().catch(() => undefined);
});
