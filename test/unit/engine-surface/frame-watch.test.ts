// FrameWatch behind the envelope scanner, whose payloads are views of the pushed chunk: the
// end-of-stream payload it keeps must outlive the chunk (the native tail's batch reader reuses
// its buffer for the next batch).
import { expect, it } from "vitest";
import { EnvelopeScanner } from "../../../src/core/envelope.js";
import { FrameWatch } from "../../../src/api/engine/frame-watch.js";
import { StreamTiming } from "../../../src/api/engine/stream-timing.js";

const frame = (flags: number, payload: number[]) => [flags, 0, 0, 0, payload.length, ...payload];

it("keeps the end-of-stream payload after the chunk it came in is overwritten", () => {
  const watch = new FrameWatch(0x02, new StreamTiming());
  const scanner = new EnvelopeScanner(watch);
  const chunk = Uint8Array.from(frame(0x02, [0x7b, 0x7d]));
  scanner.push(chunk);
  chunk.fill(0x58);
  expect([...watch.endPayload!]).toEqual([0x7b, 0x7d]);
});

it("counts the tokens of chunks read straight off the chunk, after the first token", () => {
  const timing = new StreamTiming();
  const watch = new FrameWatch(0x02, timing);
  const scanner = new EnvelopeScanner(watch);
  // GenerateResponse{chunk{token_ids: [5, 6]}}: field 1 (chunk), field 1 packed (token ids).
  const chunkFrame = frame(0, [0x0a, 4, 0x0a, 2, 5, 6]);
  scanner.push(Uint8Array.from([...chunkFrame, ...chunkFrame, ...chunkFrame]));
  expect(timing.stats().outputTokens).toBe(6);
});
