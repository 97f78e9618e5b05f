import { describe, expect, it } from "vitest";
import { classifySseEvent, completeEventsEnd, countOutputPieces, eventStartAt, needsParse, outputPieces, scanEvents, splitSseEvents, sseData, usageOf } from "../../../src/api/openai/sse.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("splitSseEvents", () => {
  it.each([
    ["one event", "data: a\n\n", ["data: a\n\n"], ""],
    ["two and a tail", "data: a\n\ndata: b\n\ndata: c", ["data: a\n\n", "data: b\n\n"], "data: c"],
    ["CRLF", "data: a\r\n\r\ndata: b\r\n", ["data: a\r\n\r\n"], "data: b\r\n"],
    ["lone CR at the end waits", "data: a\r\n\r", [], "data: a\r\n\r"],
    ["multi-line event", "event: x\ndata: 1\ndata: 2\n\n", ["event: x\ndata: 1\ndata: 2\n\n"], ""],
    ["nothing yet", "data: {\"partial", [], "data: {\"partial"],
  ])("%s", (_name, buffer, events, rest) => {
    expect(splitSseEvents(buffer)).toEqual({ events, rest });
  });
  it("re-joining events and rest gives the input back (nothing lost or reordered)", () => {
    const input = "data: 1\n\n: comment\n\ndata: 2\r\n\r\ndata: 3";
    const { events, rest } = splitSseEvents(input);
    expect(events.join("") + rest).toBe(input);
  });
});

describe("sseData / classifySseEvent", () => {
  it.each([
    ["data: [DONE]\n\n", { kind: "done" }],
    ["data:[DONE]\n\n", { kind: "done" }],
    [": keep-alive\n\n", { kind: "other" }],
    ["data: not json\n\n", { kind: "other" }],
    ['data: {"error":{"message":"boom","type":"InternalServerError","code":500}}\n\n', { kind: "error", message: "boom", status: 500 }],
    ['data: {"error":{"message":"busy","code":503}}\n\n', { kind: "error", message: "busy", status: 503 }],
    ['data: {"error":{"message":"x","status":429}}\n\n', { kind: "error", message: "x", status: 429 }],
    ['data: {"error":"plain"}\n\n', { kind: "error", message: "plain", status: 500 }],
    ['data: {"error":{"message":"odd code","code":"weird"}}\n\n', { kind: "error", message: "odd code", status: 500 }],
    ['data: {"choices":[],"usage":null}\n\n', { kind: "chunk", json: { choices: [], usage: null } }],
  ])("%j", (event, expected) => {
    expect(classifySseEvent(event)).toEqual(expected);
  });
  it("joins multi-line data", () => {
    expect(sseData("data: a\ndata: b\n\n")).toBe("a\nb");
  });
});

describe("outputPieces / usageOf", () => {
  it.each([
    [{ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }, 0],
    [{ choices: [{ index: 0, delta: { content: " hi" } }, { index: 1, delta: { content: " yo" } }] }, 2],
    [{ choices: [{ index: 0, text: " t", finish_reason: null }] }, 1],
    [{ choices: [{ index: 0, delta: { tool_calls: [] } }] }, 1],
    [{ choices: [] }, 0],
  ])("%j -> %i", (chunk, n) => {
    expect(outputPieces(chunk)).toBe(n);
  });
  it("reads usage", () => {
    expect(usageOf({ usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } })).toEqual({ promptTokens: 3, completionTokens: 5 });
    expect(usageOf({ usage: null })).toBeUndefined();
  });
});

describe("byte scanning (the relay's fast path)", () => {
  it.each([
    ["whole events", "data: a\n\ndata: b\n\n", 18],
    ["a tail", "data: a\n\ndata: b", 9],
    ["CRLF", "data: a\r\n\r\ndata: b\r\n", 11],
    ["lone CR at the end waits", "data: a\r\n\r", 0],
    ["lone CRs", "data: a\r\rdata: b", 9],
    ["nothing yet", 'data: {"partial', 0],
  ])("completeEventsEnd: %s", (_name, text, end) => {
    expect(completeEventsEnd(enc(text))).toBe(end);
    // Same cut as the string splitter.
    const { events } = splitSseEvents(text);
    expect(events.join("").length).toBe(end);
  });
  it.each([
    ['data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n', false],
    ['data: {"choices":[{"index":0,"text":"x"}],"usage":null}\n\n', false],
    ['data: {"choices":[],"usage":{"prompt_tokens":1}}\n\n', true],
    ['data: {"error":{"message":"boom"}}\n\n', true],
    ['data: {"error": "plain"}\n\n', true],
    ['data: {"choices":[{"delta":{"content":"say \\"error\\": yes"}}]}\n\n', false],
    ["data: [DONE]\n\n", true],
  ])("needsParse %j -> %s", (text, parse) => {
    expect(needsParse(enc(text))).toBe(parse);
  });
  it.each([
    ["nothing to parse", 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\n', { parse: false, pieces: 2, at: -1 }],
    ["[DONE] after two pieces", 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n', { parse: true, pieces: 2, at: 74 }],
    ["usage in the second event", 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}],"usage":{"prompt_tokens":1}}\n\n', { parse: true, pieces: 2, at: 66 }],
    ["an error first", 'data: {"error":{"message":"x"}}\n\ndata: {"choices":[{"text":"a"}]}\n\n', { parse: true, pieces: 0, at: 7 }],
    // The loop's bounds: a quote at byte 0 has no member-name opener before it, nothing after
    // [DONE] is counted, and a member name cut at the end of the bytes has no value yet.
    ["a quote at byte 0", '"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\n', { parse: false, pieces: 1, at: -1 }],
    ["a piece after [DONE]", 'data: [DONE]\n\ndata: {"choices":[{"text":"z"}]}\n\n', { parse: true, pieces: 0, at: 6 }],
    ["a name cut at the end", 'data: {"choices":[{"text"', { parse: false, pieces: 0, at: -1 }],
  ])("scanEvents: %s", (_name, text, scan) => {
    expect(scanEvents(enc(text))).toEqual(scan);
    if (scan.at >= 0) expect(text.slice(scan.at)).toMatch(/^(\[DONE\]|"error"|"usage")/);
  });
  it.each(["data: a\n\ndata: b\n\n", "data: a\r\n\r\ndata: b\r\n\r\n", "data: a\r\rdata: b\r\r", "data: a\ndata: a2\n\ndata: b\r\n\ndata: c\n\r\n", "data: only\n\n", ": comment\n\ndata: x\r\n\r\n"])(
    "eventStartAt %j: the start of the event splitSseEvents puts each byte in",
    (text) => {
      const starts: number[] = [];
      let at = 0;
      for (const e of splitSseEvents(text).events) {
        for (let i = 0; i < e.length; i++) starts.push(at);
        at += e.length;
      }
      const b = enc(text);
      // Each byte of an event (its own line ends but the last excepted: the blank line that
      // ends it is where the next one begins only once it is complete).
      for (let i = 0; i < starts.length; i++) if (b[i] !== 0x0a && b[i] !== 0x0d) expect([i, eventStartAt(b, i)]).toEqual([i, starts[i]]);
    },
  );
  it.each([
    [{ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }, 0],
    [{ choices: [{ index: 0, delta: { content: " hi" } }, { index: 1, delta: { content: " yo" } }] }, 2],
    [{ choices: [{ index: 0, text: " t", finish_reason: null }] }, 1],
    [{ choices: [{ index: 0, delta: { reasoning_content: "r" } }] }, 1],
    [{ choices: [{ index: 0, delta: { reasoning: "r" } }] }, 1],
    [{ choices: [{ index: 0, delta: { reasoning: "" } }] }, 0],
    [{ choices: [{ index: 0, delta: { tool_calls: [] } }] }, 1],
    [{ choices: [{ index: 0, delta: { content: 'a "text":"b"' } }] }, 1],
    [{ choices: [] }, 0],
  ])("countOutputPieces %j -> %i (as outputPieces)", (chunk, n) => {
    expect(countOutputPieces(enc(`data: ${JSON.stringify(chunk)}\n\n`))).toBe(n);
    expect(outputPieces(chunk)).toBe(n);
  });
});
