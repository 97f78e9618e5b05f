// The envelope scanner against every way a body can be cut into chunks: frames split at each
// byte (header, tag, payload), several frames per chunk, empty frames, and which frames start
// with a flag asked for. The expected frames come from the bytes themselves.
import { describe, expect, it } from "vitest";
import { EnvelopeScanner, lengthDelimitedTag, type EnvelopeSink } from "../../../src/core/envelope.js";

function envelope(flags: number, payload: number[]): number[] {
  const n = payload.length;
  return [flags, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff, ...payload];
}

interface Seen {
  frames: [number, number, number][];
  payloads: [number, number[]][];
}

/** A sink that asks for the payloads of frames whose tag is in `collect`, or flagged 0x02. */
function recorder(collect: number[] = []): EnvelopeSink & Seen {
  const seen: Seen = { frames: [], payloads: [] };
  return {
    ...seen,
    frame(flags, length, tag) {
      seen.frames.push([flags, length, tag]);
      return (flags & 0x02) !== 0 || collect.includes(tag);
    },
    payload(flags, data) {
      seen.payloads.push([flags, [...data]]);
    },
  };
}

/** Splits `bytes` at the given offsets. */
function chunks(bytes: number[], cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(Uint8Array.from(bytes.slice(at, cut)));
    at = cut;
  }
  return out;
}

const CHUNK = lengthDelimitedTag(1);
const COMPLETE = lengthDelimitedTag(2);
const body = [
  ...envelope(0, [CHUNK, 2, 8, 1]),
  ...envelope(0, []), // a keepalive: an empty message
  ...envelope(0, [COMPLETE, 1, 0x10]),
  ...envelope(2, [0x7b, 0x7d]),
];

describe("EnvelopeScanner", () => {
  it("tags: field 1 and 2 of a length-delimited field are 0x0a and 0x12", () => {
    expect([CHUNK, COMPLETE]).toEqual([0x0a, 0x12]);
  });

  it.each(Array.from({ length: body.length + 1 }, (_, i) => i))("a body cut at byte %i: the same frames, tags and collected payloads", (cut) => {
    const sink = recorder([COMPLETE]);
    const scanner = new EnvelopeScanner(sink);
    for (const c of chunks(body, cut === 0 || cut === body.length ? [] : [cut])) scanner.push(c);
    expect(sink.frames).toEqual([
      [0, 4, CHUNK],
      [0, 0, -1],
      [0, 3, COMPLETE],
      [2, 2, 0x7b],
    ]);
    expect(sink.payloads).toEqual([
      [0, [COMPLETE, 1, 0x10]],
      [2, [0x7b, 0x7d]],
    ]);
    expect(scanner.atBoundary).toBe(true);
  });

  it("a body cut at every two places: the same frames and payloads (whole frames are lent from the chunk)", () => {
    for (let a = 1; a < body.length; a++) {
      for (let b = a + 1; b < body.length; b++) {
        const sink = recorder([COMPLETE, CHUNK]);
        const scanner = new EnvelopeScanner(sink);
        for (const c of chunks(body, [a, b])) scanner.push(c);
        expect(sink.frames.map((f) => f[2])).toEqual([CHUNK, -1, COMPLETE, 0x7b]);
        expect(sink.payloads).toEqual([
          [0, [CHUNK, 2, 8, 1]],
          [0, [COMPLETE, 1, 0x10]],
          [2, [0x7b, 0x7d]],
        ]);
        expect(scanner.atBoundary).toBe(true);
      }
    }
  });

  it("a body fed one byte at a time", () => {
    const sink = recorder([CHUNK]);
    const scanner = new EnvelopeScanner(sink);
    for (const b of body) scanner.push(Uint8Array.of(b));
    expect(sink.frames.map((f) => f[2])).toEqual([CHUNK, -1, COMPLETE, 0x7b]);
    expect(sink.payloads[0]).toEqual([0, [CHUNK, 2, 8, 1]]);
  });

  it.each([
    ["mid-header", 3],
    ["after the header", 5],
    ["mid-payload", 7],
  ])("a body that stops %s is not at a boundary", (_name, at) => {
    const scanner = new EnvelopeScanner(recorder());
    scanner.push(Uint8Array.from(body.slice(0, at)));
    expect(scanner.atBoundary).toBe(false);
  });

  it.each([
    // [chunk cuts, offsets of an 0x02-flagged header per chunk]
    [[], [body.length - 7]],
    [[body.length - 7], [-1, 0]],
    [[body.length - 6], [body.length - 7, -1]], // its flag byte is the last of the first chunk
    [[5], [-1, body.length - 12]],
  ])("push reports where a frame with the asked flag starts (cuts %j)", (cuts, found) => {
    const scanner = new EnvelopeScanner(recorder());
    expect(chunks(body, cuts).map((c) => scanner.push(c, 0x02))).toEqual(found);
  });

  it.each([
    // [cut, wholeUpTo after each chunk]
    [9, [9, body.length - 9]], // the first frame exactly: whole, then the rest
    [7, [0, body.length - 7]], // inside the first frame: nothing whole yet, then all
    [11, [9, body.length - 11]], // into the second (empty) frame's header
    [25, [22, 4]], // into the end frame's payload
  ])("wholeUpTo: where the complete frames of a chunk end (cut at %i)", (cut, whole) => {
    const scanner = new EnvelopeScanner(recorder());
    expect(
      chunks(body, [cut]).map((c) => {
        scanner.push(c);
        return scanner.wholeUpTo;
      }),
    ).toEqual(whole);
  });

  it("a frame under way since an earlier chunk: wholeUpTo is -1", () => {
    const scanner = new EnvelopeScanner(recorder());
    const big = envelope(0, Array.from({ length: 20 }, () => 1));
    const [a, b, c] = chunks(big, [3, 10]);
    scanner.push(a!);
    expect(scanner.wholeUpTo).toBe(0);
    scanner.push(b!);
    expect(scanner.wholeUpTo).toBe(-1);
    scanner.push(c!);
    expect(scanner.wholeUpTo).toBe(c!.length);
  });

  it("lengths use all four bytes, big-endian", () => {
    const sink = recorder();
    new EnvelopeScanner(sink).push(Uint8Array.of(0, 0x01, 0x02, 0x03, 0x04, 0x0a));
    expect(sink.frames).toEqual([[0, 0x01020304, 0x0a]]);
  });
});
