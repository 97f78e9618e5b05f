// api/native-relay.ts in workerd over a stand-in leg whose body is a sim engine's real SSE
// body (fetched here): the client's body ends when the engine's does, not a watch pause later.
// The watch here pauses a minute between batches, so a relay that waited for its next batch
// would time the test out; it hurries the copy once the pipe ended instead.
import { afterAll, beforeAll, expect, it } from "vitest";
import { NativeRelay } from "../../src/api/native-relay.js";
import { SseWatch, type RelayEnd } from "../../src/api/openai/sse-watch.js";
import { sseErrorEvent } from "../../src/api/openai/errors.js";
import type { DetachedLeg } from "../../src/pd/leg.js";
import type { SimFault } from "../../sim/types.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";

const LONG_PAUSE = { maxBytes: 64 * 1024, pauseMs: 60_000 };
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster({ engines: [{ name: "e", role: "both", kvConnector: "none", model: "m", port: 0, latency: { perPromptTokenMs: 0, perOutputTokenMs: 1, perBlockPullMs: 0 } }] });
});
afterAll(() => cluster.close());

async function relay(fault?: SimFault) {
  const res = await fetch(`${cluster.url("e")}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(fault ? { "x-sim-fault": JSON.stringify(fault) } : {}) },
    body: JSON.stringify({ model: "m", prompt: "count", max_tokens: 8, ignore_eos: true, stream: true }),
  });
  const reader = res.body!.getReader();
  const first = await reader.read();
  reader.releaseLock();
  const ends: string[] = [];
  const leg: DetachedLeg<Uint8Array> = { body: res.body!, signal: new AbortController().signal, end: (how) => ends.push(how) };
  let end: RelayEnd | undefined;
  const watch = new SseWatch({ leg: "engine", clientSignal: new AbortController().signal, now: Date.now, onEnd: (e) => (end = e) });
  const body = new NativeRelay(leg, watch, { clientSignal: new AbortController().signal, errorEvent: sseErrorEvent, batches: LONG_PAUSE }).start(first.value!);
  return { text: await new Response(body).text(), ends, end: () => end };
}

it("completed: the client's body ends with the engine's, recorded with its output", async () => {
  const got = await relay();
  expect(got.text.endsWith("data: [DONE]\n\n")).toBe(true);
  expect(got.ends).toEqual(["completed"]);
  expect(got.end()).toMatchObject({ outcome: "completed", status: 200, stats: { outputPieces: 8 } });
});

it("no [DONE]: the gateway's error event follows as soon as the engine's body ended", async () => {
  const got = await relay({ failMidStream: { afterTokens: 3, code: "internal", sse: "no-done" } });
  expect(got.text).not.toContain("data: [DONE]");
  expect(got.text).toContain("engine_stream_error");
  expect(got.text).toContain("ended before [DONE]");
  expect(got.end()).toMatchObject({ outcome: "failed", errorCode: "engine_stream_error" });
});
