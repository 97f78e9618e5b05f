// The byte splitter behind the Responses and Messages relays: the same events (their exact
// bytes and `event:` types) however the stream is cut, each byte searched once.
import { describe, expect, it } from "vitest";
import { EventBytesSplitter, type EventRange } from "../../../src/api/event-bytes.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const WIRE = [
  'event: response.created\ndata: {"type":"response.created","response":{"id":"r"}}\n\n',
  'event: response.output_text.delta\ndata: {"delta":"héllo"}\n\n',
  'data: {"type":"ping"}\n\n',
  "event:message_stop\ndata: {}\n\n",
  'event: content_block_delta\ndata: {"a":1}\ndata: {"b":2}\n\n',
];
const WANT = [
  { type: "response.created", text: WIRE[0] },
  { type: "response.output_text.delta", text: WIRE[1] },
  { type: undefined, text: WIRE[2] },
  { type: "message_stop", text: WIRE[3] },
  { type: "content_block_delta", text: WIRE[4] },
];
const seen = (ranges: EventRange[]) => ranges.map((r) => ({ type: r.type, text: dec.decode(r.bytes.subarray(r.start, r.end)) }));

describe("EventBytesSplitter", () => {
  it("one chunk: every event with its type, the bytes as sent", () => {
    expect(seen(new EventBytesSplitter().push(enc.encode(WIRE.join(""))))).toEqual(WANT);
  });

  it("cut at every byte position, in two and in single bytes: the same events", () => {
    const all = enc.encode(WIRE.join(""));
    for (let cut = 0; cut <= all.length; cut++) {
      const s = new EventBytesSplitter();
      expect(seen([...s.push(all.subarray(0, cut)), ...s.push(all.subarray(cut))])).toEqual(WANT);
      expect(s.pendingBytes).toBe(0);
    }
    const s = new EventBytesSplitter();
    const byByte = [...all].flatMap((b) => s.push(Uint8Array.of(b)));
    expect(seen(byByte)).toEqual(WANT);
  });

  it("holds an unfinished event and counts it; takeHeld hands it over", () => {
    const s = new EventBytesSplitter();
    expect(s.push(enc.encode("event: x\ndata: 12"))).toEqual([]);
    expect(s.push(enc.encode("34\n"))).toEqual([]);
    expect(s.pendingBytes).toBe(20);
    expect(dec.decode(Uint8Array.from(s.takeHeld().flatMap((b) => [...b])))).toBe("event: x\ndata: 1234\n");
    expect(s.pendingBytes).toBe(0);
  });

  it("a non-ASCII event type is not read as one", () => {
    expect(new EventBytesSplitter().push(enc.encode("event: é\ndata: 1\n\n"))[0]!.type).toBeUndefined();
  });
});
