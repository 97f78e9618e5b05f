// Fault injection per engine (POST/DELETE /sim/faults) and per request (x-sim-fault), on the
// gRPC and OpenAI surfaces.
import { Code, ConnectError } from "@connectrpc/connect";
import { connect } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningCluster } from "../../../sim/types.js";
import {
  FAST, cluster, collect, connectClient, genReq, generate, parseSse, postJson, prefillInit, resetAll, stats, waitFor,
  type EngineClient,
} from "./helpers.js";

let c: RunningCluster;
let client: EngineClient;
let url: string;
const req = (id: string, stream = true) => ({
  requestId: id, input: { case: "text" as const, value: "fault prompt here" }, samplingParams: { maxTokens: 10, ignoreEos: true }, stream,
});
const errOf = (p: Promise<unknown>) => p.then(() => undefined, (e) => ConnectError.from(e));
const setFaults = async (body: unknown) => {
  const r = await postJson(`${url}/sim/faults`, body);
  expect(r.status).toBe(200);
};

beforeAll(async () => {
  c = await cluster([{ name: "e", role: "both", kvConnector: "NixlConnector", latency: FAST }]);
  client = connectClient(c.engine("e"));
  url = c.engine("e").url;
});
afterAll(() => c.close());
beforeEach(async () => {
  await fetch(`${url}/sim/faults`, { method: "DELETE" });
  await resetAll(c);
});

describe("gRPC faults", () => {
  it("failAfterFrames errors the stream after N frames, whatever the stream mode", async () => {
    await setFaults({ failAfterFrames: { frames: 1, code: "internal", message: "after one" }, count: 1 });
    const frames: unknown[] = [];
    const err = await errOf((async () => { for await (const f of client.generate(genReq(req("aff", false)))) frames.push(f); })());
    expect(frames).toHaveLength(1);
    expect([err?.code, err?.rawMessage]).toEqual([Code.Internal, "after one"]);
  });

  it.each(["garbage", "truncated"] as const)("malformedResponse %s breaks the client's decoding, then is used up", async (kind) => {
    await setFaults({ malformedResponse: kind, count: 1 });
    const err = await errOf((async () => { for await (const _ of client.generate(genReq(req(`mal-${kind}`)))) void _; })());
    expect(err).toBeInstanceOf(ConnectError);
    const ok: unknown[] = [];
    for await (const f of client.generate(genReq(req(`mal-ok-${kind}`)))) ok.push(f);
    expect(ok.length).toBeGreaterThan(0);
  });

  it("failStart fails the call with the named code before any frame; count limits it", async () => {
    await setFaults({ failStart: { code: "unavailable", message: "engine warming up" }, count: 1 });
    const frames: unknown[] = [];
    const err = await errOf((async () => { for await (const f of client.generate(genReq(req("f1")))) frames.push(f); })());
    expect(err?.code).toBe(Code.Unavailable);
    expect(err?.rawMessage).toBe("engine warming up");
    expect(frames).toHaveLength(0);
    // count: 1 -> consumed.
    const ok = await generate(client, req("f2"));
    expect(ok.completes).toHaveLength(1);
    expect(await (await fetch(`${url}/sim/faults`)).json()).toEqual([]);
  });

  it("failMidStream emits exactly afterTokens chunks, then errors", async () => {
    await setFaults([{ failMidStream: { afterTokens: 3, code: "internal", message: "gpu fell off" } }]);
    const chunks: unknown[] = [];
    const err = await errOf((async () => { for await (const f of client.generate(genReq(req("f3")))) chunks.push(f); })());
    expect(err?.code).toBe(Code.Internal);
    expect(err?.rawMessage).toBe("gpu fell off");
    expect(chunks).toHaveLength(3);
  });

  it("a per-request header fault applies to that request only", async () => {
    const err = await errOf(generate(client, req("f4"), { "x-sim-fault": JSON.stringify({ failStart: { code: "resource_exhausted" } }) }));
    expect(err?.code).toBe(Code.ResourceExhausted);
    expect((await generate(client, req("f5"))).completes).toHaveLength(1);
    const bad = await errOf(generate(client, req("f6"), { "x-sim-fault": "{nope" }));
    expect(bad?.code).toBe(Code.InvalidArgument);
  });

  it("hang sends nothing until aborted", async () => {
    await setFaults({ hang: true });
    const run = collect(client.generate(genReq(req("f7"))));
    await waitFor(async () => (await stats(c.engine("e"))).activeRequests === 1);
    const loads = await client.getLoads({});
    expect(loads.loads[0]).toMatchObject({ numWaitingReqs: 1, numRunningReqs: 0 });
    await client.abort({ requestIds: ["f7"] });
    const r = await run;
    expect(r.chunks).toHaveLength(0);
    expect(r.completes.map((x) => x.finishReason)).toEqual(["abort"]);
  });

  it("leg filters prefill-form requests from the others", async () => {
    await setFaults({ failStart: { code: "internal" }, leg: "prefill" });
    expect((await generate(client, req("f8"))).completes).toHaveLength(1);
    const err = await errOf(generate(client, prefillInit("f9", "some prompt")));
    expect(err?.code).toBe(Code.Internal);
  });

  it("unhealthy flips HealthCheck and /health; DELETE clears it", async () => {
    await setFaults({ unhealthy: true });
    expect(await client.healthCheck({})).toMatchObject({ healthy: false, message: "Engine is not alive" });
    expect((await fetch(`${url}/health`)).status).toBe(503);
    // Generation is unaffected.
    expect((await generate(client, req("f10"))).completes).toHaveLength(1);
    await fetch(`${url}/sim/faults`, { method: "DELETE" });
    expect((await client.healthCheck({})).healthy).toBe(true);
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it("slowAbortMs: Abort acts at once and answers after the delay; generation is unaffected", async () => {
    await setFaults({ slowAbortMs: 300 });
    const t = Date.now();
    const answered = client.abort({ requestIds: ["slow-1"] });
    await waitFor(async () => (await stats(c.engine("e"))).abortsReceived === 1);
    await answered;
    expect(Date.now() - t).toBeGreaterThanOrEqual(290);
    expect((await generate(client, req("f11"))).completes).toHaveLength(1);
    const r = await postJson(`${url}/sim/faults`, { slowAbortMs: -1 });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("slowAbortMs");
  });

  it("eosAfter: the model samples EOS as that output token; must be a positive integer", async () => {
    await setFaults({ eosAfter: 2 });
    const r = await generate(client, { requestId: "eos-1", input: { case: "text", value: "a b c" }, samplingParams: { maxTokens: 10 } });
    expect(r.completes[0]).toMatchObject({ finishReason: "stop", completionTokens: 2 });
    await fetch(`${url}/sim/faults`, { method: "DELETE" });
    const bad = await postJson(`${url}/sim/faults`, { eosAfter: 0 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("eosAfter");
  });

  it("rejects malformed fault lists with a message naming the field", async () => {
    const r = await postJson(`${url}/sim/faults`, [{ failStart: { code: "bogus" } }]);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("faults[0].failStart.code");
  });
});

describe("OpenAI faults", () => {
  const body = { model: "sim-model", prompt: "fault prompt here", max_tokens: 8, ignore_eos: true };

  it("failStart answers the mapped HTTP status (or httpStatus) with the error body", async () => {
    await setFaults([{ failStart: { code: "unavailable", message: "down" }, count: 1 }, { failStart: { code: "internal", httpStatus: 429 }, count: 1 }]);
    const r1 = await postJson(`${url}/v1/completions`, body);
    expect(r1.status).toBe(503);
    expect(await r1.json()).toEqual({ error: { message: "down", type: "ServiceUnavailableError", param: null, code: 503 } });
    const r2 = await postJson(`${url}/v1/completions`, { ...body, stream: true });
    expect(r2.status).toBe(429);
    expect(((await r2.json()) as { error: { code: number } }).error.code).toBe(429);
  });

  it("failMidStream sends N chunks then an SSE error event and [DONE], as vLLM does", async () => {
    const r = await postJson(`${url}/v1/completions`, { ...body, stream: true }, { "x-sim-fault": JSON.stringify({ failMidStream: { afterTokens: 2, code: "internal" } }) });
    expect(r.status).toBe(200);
    const events = parseSse(await r.text()) as Record<string, unknown>[];
    expect(events).toHaveLength(4);
    expect(events.slice(0, 2).every((e) => Array.isArray(e.choices))).toBe(true);
    expect(events[2]).toMatchObject({ error: { code: 500 } });
    expect(events[3]).toBe("[DONE]");
    const nonStream = await postJson(`${url}/v1/completions`, body, { "x-sim-fault": JSON.stringify({ failMidStream: { afterTokens: 2, code: "unavailable" } }) });
    expect(nonStream.status).toBe(503);
  });

  it("hang holds the request until the client goes away", async () => {
    const ctrl = new AbortController();
    const p = fetch(`${url}/v1/completions`, {
      method: "POST", signal: ctrl.signal, headers: { "content-type": "application/json", "x-sim-fault": '{"hang":true}' }, body: JSON.stringify(body),
    }).catch((e: Error) => e.name);
    await waitFor(async () => (await stats(c.engine("e"))).activeRequests === 1);
    ctrl.abort();
    expect(await p).toBe("AbortError");
    await waitFor(async () => (await stats(c.engine("e"))).streamsCancelled === 1);
    expect((await stats(c.engine("e"))).activeRequests).toBe(0);
  });
});

describe("connection-level behaviour", () => {
  const body = { model: "sim-model", prompt: "fault prompt here", max_tokens: 4, ignore_eos: true };

  it("dropConnection closes a generation request's connection unanswered, count times, and leaves other routes alone", async () => {
    await setFaults({ dropConnection: true, count: 2 });
    expect((await fetch(`${url}/health`)).status).toBe(200);
    for (let i = 0; i < 2; i++) await expect(postJson(`${url}/v1/completions`, body)).rejects.toThrow();
    expect((await postJson(`${url}/v1/completions`, body)).status).toBe(200);
    const s = await stats(c.engine("e"));
    expect(s.connectionsDropped).toBe(2);
    expect(s.generateRequests).toBe(1);
  });

  it("rejects a non-boolean dropConnection naming the field", async () => {
    const r = await postJson(`${url}/sim/faults`, { dropConnection: "yes" });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("dropConnection");
  });

  it("an idle connection is closed after keepAliveTimeoutMs (default 5 s, uvicorn's), as vLLM does", async () => {
    expect((await fetch(`${url}/health`)).headers.get("keep-alive")).toBe("timeout=5");
    const k = await cluster([{ name: "k", role: "both", kvConnector: "none", latency: FAST, keepAliveTimeoutMs: 300 }]);
    try {
      const { port } = new URL(k.engine("k").url);
      const idleMs = await new Promise<number>((resolve, reject) => {
        let answeredAt = 0;
        const sock = connect(Number(port), "127.0.0.1", () => sock.write("GET /health HTTP/1.1\r\nHost: sim\r\n\r\n"));
        sock.once("data", () => (answeredAt = Date.now()));
        sock.once("close", () => resolve(Date.now() - answeredAt));
        sock.once("error", reject);
      });
      expect(idleMs).toBeGreaterThanOrEqual(250);
      expect(idleMs).toBeLessThan(4_500); // well before the 5 s default would close it
    } finally {
      await k.close();
    }
  });
});

describe("bigEvent (vLLM's large logprobs events)", () => {
  const body = { model: "sim-model", prompt: "fault prompt here", max_tokens: 3, ignore_eos: true, stream: true };

  it("the first event carries about `bytes` bytes of logprobs, then the stream goes on as usual", async () => {
    await setFaults({ bigEvent: { bytes: 300_000 }, count: 1 });
    const text = await (await postJson(`${url}/v1/completions`, body)).text();
    const events = text.split("\n\n").filter(Boolean);
    expect(events[0]!.length).toBeGreaterThanOrEqual(300_000);
    expect(events[0]!.length).toBeLessThan(300_100);
    const first = JSON.parse(events[0]!.slice("data: ".length)) as { choices: { text: string; logprobs: { content: unknown[] } }[] };
    expect(first.choices[0]!.text).toBe("");
    expect(first.choices[0]!.logprobs.content.length).toBeGreaterThan(9_000);
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(events.length).toBe(1 + 3 + 1);
    // count: 1 was spent
    const again = await (await postJson(`${url}/v1/completions`, body)).text();
    expect(again.length).toBeLessThan(5_000);
  });

  it("unterminated: the event never ends and the stream stays open until the client leaves", async () => {
    await setFaults({ bigEvent: { bytes: 200_000, unterminated: true } });
    const ctrl = new AbortController();
    const res = await fetch(`${url}/v1/completions`, { method: "POST", signal: ctrl.signal, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const reader = res.body!.getReader();
    let got = "";
    while (got.length < 200_000) got += new TextDecoder().decode((await reader.read()).value);
    expect(got).not.toContain("\n\n");
    const more = await Promise.race([reader.read().then(() => "more"), new Promise((r) => setTimeout(() => r("nothing"), 300))]);
    expect(more).toBe("nothing");
    ctrl.abort();
    await waitFor(async () => (await stats(c.engine("e"))).activeRequests === 0);
  });

  it("rejects a bigEvent without a byte count, naming the field", async () => {
    const r = await postJson(`${url}/sim/faults`, { bigEvent: { unterminated: true } });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("bigEvent.bytes");
  });
});
