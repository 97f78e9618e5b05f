// The named-event SSE splitter of the Responses and Messages relays: the same events however
// the bytes are cut, whatever the line ends.
import { describe, expect, it } from "vitest";
import { EventSplitter } from "../../../src/api/event-relay.js";

const wire =
  'event: message_start\ndata: {"type":"message_start"}\n\n' +
  ": a comment\r\n\r\n" +
  'event: content_block_delta\r\ndata: {"a":1}\r\ndata: {"b":"€"}\r\n\r\n' +
  'data: {"no":"event"}\r\r' +
  "event: message_stop\ndata: {}\n\n";

const want = [
  { event: "message_start", data: '{"type":"message_start"}' },
  { event: "content_block_delta", data: '{"a":1}\n{"b":"€"}' },
  { event: undefined, data: '{"no":"event"}' },
  { event: "message_stop", data: "{}" },
];

describe("EventSplitter", () => {
  it("whole", () => {
    expect(new EventSplitter().push(new TextEncoder().encode(wire))).toEqual(want);
  });
  it.each([1, 2, 3, 7, 13])("cut every %i bytes (inside CRLF pairs and UTF-8 sequences too)", (step) => {
    const bytes = new TextEncoder().encode(wire);
    const s = new EventSplitter();
    const got = [];
    for (let at = 0; at < bytes.length; at += step) got.push(...s.push(bytes.slice(at, at + step)));
    expect(got).toEqual(want);
    expect(s.pendingChars).toBe(0);
  });
});
