// Every error row of pd-reference 6 on the OpenAI surface, driven by the sim's fault injection
// and closed ports: stable codes, statuses, the OpenAI error shape and x-gateway-error-code.
// (A prefill body that breaks after its head, prefill_read_failed, is in the executor's unit
// test: the sim cannot produce it.)
import { APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, openai, post } from "./openai-fixtures.js";

const CLOSED = "http://127.0.0.1:1";
const chat = (extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: "user" as const, content: "an engine is about to fail" }], max_tokens: 8, ...extra });
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function errorOf(res: Response) {
  const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
  return { status: res.status, header: res.headers.get("x-gateway-error-code"), ...body.error };
}

describe("prefill leg", () => {
  it("transport error -> 502 prefill_request_failed, decode never contacted", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster, { prefill: { url: CLOSED } }));
    const res = await post(gw, "/v1/chat/completions", chat());
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 502, header: "prefill_request_failed", code: "prefill_request_failed", type: "server_error", param: null });
    expect(e.message).toMatch(/^Prefill transport error: .* \(prefill engine 'prefill'\)$/);
    expect(res.headers.get("x-pd-prefill")).toBe("ran");
    expect((await cluster.stats("decode")).generateRequests).toBe(0);
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "prefill", engine: "prefill", status: 502 }]);
    expect(gw.metrics.ofType("pd_decision")).toHaveLength(0);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 502, errorCode: "prefill_request_failed", backend: "pd" }]);
  });

  it.each([["prefill"], ["decode"]] as const)("a %s connection closed before any answer is retried on another connection, a bounded number of times", async (engine) => {
    // Gateway retries are off (the fixture's default): only the engine client's own
    // stale-connection retries are at work.
    cluster = await startTestCluster({ engines: httpPairSpecs({ leaseMs: 500 }) });
    const gw = testGateway(httpPairConfig(cluster));
    await cluster.setFaults(engine, { dropConnection: true, count: 3 });
    const ok = await post(gw, "/v1/chat/completions", chat());
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { choices: unknown[] }).choices).toHaveLength(1);
    expect((await cluster.stats(engine)).connectionsDropped).toBe(3);

    await cluster.setFaults(engine, { dropConnection: true, count: 10 });
    const res = await post(gw, "/v1/chat/completions", chat());
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 502, code: `${engine}_request_failed` });
    expect((await cluster.stats(engine)).connectionsDropped).toBe(3 + 4);
    if (engine === "prefill") return expectNoPinnedBlocks(cluster);
    // No decode engine ever saw the handoff, so none could take or reject it: the prefill's
    // blocks wait for their lease, as in vLLM (VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
    expect((await cluster.stats("prefill")).handoffsPinned).toBe(1);
    await eventually(() => expectNoPinnedBlocks(cluster!));
    expect((await cluster.stats("prefill")).leasesExpired).toBe(1);
  });

  it.each([
    [429, "resource_exhausted", "slow down"],
    [503, "unavailable", "warming up"],
    [400, "invalid_argument", "prompt too long"],
  ])("T24: prefill answers %i -> the same status, prefill_upstream_error, the engine's message", async (httpStatus, code, message) => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code, httpStatus, message } });
    const gw = testGateway(httpPairConfig(cluster));
    const err = await openai(gw).chat.completions.create(chat()).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(httpStatus);
    expect((err as APIError).code).toBe("prefill_upstream_error");
    expect((err as APIError).message).toContain(message);
    expect((await cluster.stats("decode")).generateRequests).toBe(0);
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "prefill", status: httpStatus }]);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: httpStatus, errorCode: "prefill_upstream_error" }]);
  });

  it("a streaming request's prefill failure is a plain JSON error too", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code: "resource_exhausted", httpStatus: 429, message: "busy" } });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await post(gw, "/v1/chat/completions", chat({ stream: true }));
    expect(await errorOf(res)).toMatchObject({ status: 429, code: "prefill_upstream_error", message: "busy (prefill engine 'prefill')", type: "rate_limit_error" });
  });
});

describe("decode leg", () => {
  it("transport error -> 502 decode_request_failed", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster, { decode: { url: CLOSED } }));
    const e = await errorOf(await post(gw, "/v1/chat/completions", chat({ n: 2 })));
    expect(e).toMatchObject({ status: 502, code: "decode_request_failed", header: "decode_request_failed" });
    expect(e.message).toMatch(/^Decode transport error: .* \(decode engine 'decode'\)$/);
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "decode", status: 502 }]);
  });

  it.each([
    [400, "invalid_argument", "decode_bad_request", 400],
    [404, "not_found", "decode_not_found", 404],
    [500, "internal", "decode_internal_error", 500],
    [502, "unavailable", "decode_bad_gateway", 502],
    [503, "unavailable", "decode_unavailable", 503],
    [429, "resource_exhausted", "decode_error", 500],
  ])("decode answers %i, not streamed -> %s (%i); prefill's handoff is released", async (httpStatus, code, gatewayCode, status) => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failStart: { code, httpStatus, message: `decode says ${httpStatus}` } });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await post(gw, "/v1/chat/completions", chat());
    expect(await errorOf(res)).toMatchObject({ status, code: gatewayCode, header: gatewayCode, message: `decode says ${httpStatus} (decode engine 'decode')` });
    expect(res.headers.get("x-pd-prefill")).toBe("ran");
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 200], ["decode", httpStatus]]);
    expect(gw.metrics.ofType("pd_decision")).toHaveLength(0);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status, errorCode: gatewayCode }]);
    // The decode engine rejected the transfer, so the prefill engine freed its blocks early.
    await eventually(() => expectNoPinnedBlocks(cluster!));
  });

  it.each([
    [503, "unavailable", "decode_unavailable", 503],
    [429, "resource_exhausted", "decode_error", 500],
  ])("decode answers %i, streamed -> one SSE error event (%s) with status %i", async (httpStatus, code, gatewayCode, status) => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failStart: { code, httpStatus, message: "no capacity" } });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await post(gw, "/v1/chat/completions", chat({ stream: true }));
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-gateway-error-code")).toBe(gatewayCode);
    const text = await res.text();
    const type = status >= 500 ? "server_error" : "invalid_request_error";
    expect(text).toBe(`data: ${JSON.stringify({ error: { message: "no capacity (decode engine 'decode')", type, param: null, code: gatewayCode } })}\n\n`);
    // The SDK surfaces it as an APIError with the status.
    const err = await openai(gw).chat.completions.create({ ...chat(), stream: true }).catch((x: unknown) => x);
    expect((err as APIError).status).toBe(status);
  });

  // The inspecting relay replaces vLLM's in-band error event with the gateway's (the native
  // default's: openai-native-relay.test.ts).
  it("decode fails mid-stream (sse_relay inspect) -> the chunks it sent, then one final SSE error event", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failMidStream: { afterTokens: 2, code: "internal", message: "mid" } });
    const gw = testGateway(httpPairConfig(cluster, { sseRelay: "inspect" }));
    const res = await post(gw, "/v1/chat/completions", chat({ stream: true, max_tokens: 8, ignore_eos: true }));
    expect(res.status).toBe(200);
    const events = (await res.text()).split("\n\n").filter((e) => e !== "");
    const last = JSON.parse(events.at(-1)!.slice("data: ".length));
    expect(last).toEqual({ error: { message: "mid (decode engine 'decode')", type: "server_error", param: null, code: "decode_stream_error" } });
    expect(events.length).toBeGreaterThan(2);
    expect(events.slice(0, -1).every((e) => e.startsWith("data: {\"id\""))).toBe(true);
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 500, errorCode: "decode_stream_error", streaming: true }]);
    expect(gw.metrics.ofType("stream_complete")).toHaveLength(0);

    // The SDK throws from the iterator after yielding the good chunks.
    let seen = 0;
    const err = await (async () => {
      const stream = await openai(gw).chat.completions.create({ ...chat(), stream: true, max_tokens: 8, ignore_eos: true } as never);
      for await (const _ of stream as unknown as AsyncIterable<unknown>) seen++;
    })().catch((x: unknown) => x);
    expect(seen).toBeGreaterThan(0);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).message).toContain("mid");
  });

  it("decode fails before its first token, not streamed -> decode_internal_error", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failMidStream: { afterTokens: 0, code: "internal", message: "early" } });
    const gw = testGateway(httpPairConfig(cluster));
    expect(await errorOf(await post(gw, "/v1/completions", { model: MODEL, prompt: "x y z", max_tokens: 4 }))).toMatchObject({ status: 500, code: "decode_internal_error", message: "early (decode engine 'decode')" });
  });

  it("skipped prefill + decode 503 -> decode_unavailable, prefill untouched", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failStart: { code: "unavailable", httpStatus: 503, message: "down" } });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "fan out", n: 4, max_tokens: 4 });
    expect(await errorOf(res)).toMatchObject({ status: 503, code: "decode_unavailable" });
    expect(res.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    expect((await cluster.stats("prefill")).generateRequests).toBe(0);
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome")).toMatchObject([{ leg: "decode", status: 503 }]);
  });
});

it("NIXL configured but the prefill engine returns no handoff -> kv_transfer_failure, decode recomputes", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs({ kvConnector: "none" }) });
  const gw = testGateway(httpPairConfig(cluster));
  const r = await openai(gw).completions.create({ model: MODEL, prompt: "the handoff never comes", max_tokens: 4 });
  expect(r.choices).toHaveLength(1);
  await gw.settle();
  expect(gw.metrics.ofType("kv_transfer_failure")).toMatchObject([{ prefillEngine: "prefill" }]);
  expect(gw.metrics.ofType("pd_decision")).toMatchObject([{ prefill: "ran", kvInjection: "none" }]);
  expect((await cluster.stats("decode")).promptTokensComputed).toBeGreaterThan(0);
});

describe("retries (pd-reference 6: the whole attempt, before anything reached the client)", () => {
  it("a retryable prefill failure is tried again and the client sees only the success", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("prefill", { failStart: { code: "unavailable", httpStatus: 503, message: "blip" }, count: 1 });
    const gw = testGateway(httpPairConfig(cluster, { retries: true }));
    const r = await openai(gw).chat.completions.create(chat());
    expect(r.choices).toHaveLength(1);
    const ids = (await cluster.stats("prefill")).recent.map((r) => r.requestId);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(`${ids[0]}-2`); // a retry is a new engine request
    await gw.settle();
    expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 503], ["prefill", 200], ["decode", 200]]);
    expect(gw.metrics.ofType("request")).toMatchObject([{ status: 200 }]);
    await expectNoPinnedBlocks(cluster);
  });

  it("a 400 is not retried", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failStart: { code: "invalid_argument", httpStatus: 400, message: "bad" } });
    const gw = testGateway(httpPairConfig(cluster, { retries: true }));
    expect((await post(gw, "/v1/completions", { model: MODEL, prompt: "x", n: 2 })).status).toBe(400);
    expect((await cluster.stats("decode")).generateRequests).toBe(1);
  });

  it("a mid-stream failure is never retried (bytes reached the client)", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    await cluster.setFaults("decode", { failMidStream: { afterTokens: 1, code: "unavailable", message: "x" } });
    const gw = testGateway(httpPairConfig(cluster, { retries: true }));
    const res = await post(gw, "/v1/completions", { model: MODEL, prompt: "x y", n: 2, stream: true, max_tokens: 5, ignore_eos: true });
    expect(await res.text()).toContain('{"error":{"message":"x"'); // vLLM's own event (the native relay)
    expect((await cluster.stats("decode")).generateRequests).toBe(1);
    await gw.settle();
    expect(gw.metrics.ofType("request")).toMatchObject([{ errorCode: "decode_stream_error", streaming: true }]);
  });
});
