// The one metrics writer (api/request-metrics.ts): one `request` event per request, whatever
// ends it; `stream_complete` only for a stream sent whole; one TTFT (from the arrival) and one
// TPOT for every surface.
import { describe, expect, it } from "vitest";
import { RequestMetrics, type OutputStats } from "../../../src/api/request-metrics.js";
import { MemorySink } from "../../../src/metrics/events.js";
import { testJob } from "../../support/job.js";

const ARRIVED = 1_000;
const stats = (o: Partial<OutputStats> = {}): OutputStats => ({ firstOutputAt: 1_100, lastOutputAt: 1_190, outputTokens: 10, inputTokens: 7, ...o });

function writer(streamed = true, now = 1_200) {
  const sink = new MemorySink();
  const m = new RequestMetrics(sink, "openai", "/v1/chat/completions", ARRIVED, { now: () => now });
  m.forJob(testJob({ model: "m", surface: "openai", endpoint: "/v1/chat/completions", payload: null, streamed, fanout: 2, promptTokens: () => ({ count: 5, exact: true }) }));
  return { sink, m };
}

describe("RequestMetrics", () => {
  it("a stream sent whole: request and stream_complete, TTFT from the arrival, TPOT per sequence", () => {
    const { sink, m } = writer();
    m.backend("pd");
    m.end(200, undefined, stats());
    expect(sink.events).toEqual([
      { type: "request", model: "m", surface: "openai", endpoint: "/v1/chat/completions", backend: "pd", streaming: true, status: 200, durationMs: 200 },
      // 10 tokens over 2 sequences: 5 each, 4 gaps in 90 ms.
      { type: "stream_complete", model: "m", surface: "openai", endpoint: "/v1/chat/completions", ttftMs: 100, tpotMs: 22.5, generationMs: 200, inputTokens: 7, outputTokens: 10 },
    ]);
  });

  it("inputTokens: the reported count, else the job's exact prompt length", () => {
    const { sink, m } = writer();
    m.end(200, undefined, stats({ inputTokens: undefined }));
    expect(sink.events[1]).toMatchObject({ inputTokens: 5 });
    const estimated = new RequestMetrics(sink, "openai", "/v1/completions", ARRIVED);
    estimated.forJob(testJob({ model: "m", surface: "openai", endpoint: "/v1/completions", payload: null, promptTokens: () => ({ count: 5, exact: false }) }));
    estimated.end(200, undefined, stats({ inputTokens: undefined }));
    expect(sink.events[3]).not.toHaveProperty("inputTokens");
  });

  it("no output sent: no TTFT or TPOT, never a placeholder", () => {
    const { sink, m } = writer();
    m.end(200, undefined, stats({ firstOutputAt: undefined, lastOutputAt: undefined, outputTokens: 0 }));
    expect(sink.events[1]).not.toHaveProperty("ttftMs");
    expect(sink.events[1]).not.toHaveProperty("tpotMs");
  });

  it.each([
    ["a failed stream", 502, "decode_stream_error", true],
    ["a cancelled stream", 499, "client_cancelled", true],
    ["a non-streamed answer", 200, undefined, false],
  ] as const)("%s: the request event only", (_name, status, code, streamed) => {
    const { sink, m } = writer(streamed);
    m.end(status, code, stats());
    expect(sink.events.map((e) => e.type)).toEqual(["request"]);
    expect(sink.events[0]).toMatchObject({ status, streaming: streamed, ...(code ? { errorCode: code } : {}) });
  });

  it("once: a second end is ignored; refused before the model is known, it is recorded with none", () => {
    const sink = new MemorySink();
    const m = new RequestMetrics(sink, "engine", "generate", ARRIVED, { streamed: true, now: () => 1_001 });
    m.end(400, "invalid_json");
    m.end(200, undefined, stats());
    expect(sink.events).toEqual([{ type: "request", model: "", surface: "engine", endpoint: "generate", backend: "none", streaming: true, status: 400, errorCode: "invalid_json", durationMs: 1 }]);
  });
});
