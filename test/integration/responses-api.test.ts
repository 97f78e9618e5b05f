// The Responses API through the Worker, with the official `openai` SDK, over the HTTP PD path
// to sim vLLM servers (issue 29): the prefill leg is vLLM's /v1/responses capped to one token
// with the NIXL tag and its handoff relayed to decode; conversation state is the gateway's
// (previous_response_id expanded from the response store, engines always get store: false).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, NIXL_TAG, openai, openaiReceived, post } from "./openai-fixtures.js";

const PROMPT = "the quick brown fox jumps over the lazy dog";
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(extra: Record<string, unknown> = {}): Promise<TestGateway> {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  return testGateway({ ...httpPairConfig(cluster), ...extra }, { RESPONSES: env.RESPONSES });
}

const responsesReceived = async (engine: string) => (await openaiReceived(cluster!, engine)).filter((r) => r.method === "/v1/responses");

describe("POST /v1/responses on openai-http engines", () => {
  it("not streamed: one capped prefill, the handoff relayed to decode, the gateway's id, stored", async () => {
    const gw = await start();
    const { data, response } = await openai(gw, { "x-request-id": "resp-1" }).responses.create({ model: MODEL, input: PROMPT, instructions: "be brief", max_output_tokens: 6 }).withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(data.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(data).toMatchObject({ object: "response", store: true, previous_response_id: null });
    expect(data.output_text.length).toBeGreaterThan(0);
    expect((data as Json).kv_transfer_params).toBeUndefined();

    const [p] = await responsesReceived("prefill");
    const [d] = await responsesReceived("decode");
    expect(p!.body).toMatchObject({ max_output_tokens: 1, ignore_eos: true, store: false, stream: false, kv_transfer_params: NIXL_TAG, instructions: "be brief" });
    const db = d!.body as Json;
    expect(db).toMatchObject({ max_output_tokens: 6, store: false, input: [{ type: "message", role: "user", content: PROMPT }] });
    expect(db.kv_transfer_params.remote_engine_id).toBe("prefill-eng");
    expect((await cluster!.stats("decode")).promptTokensComputed).toBe(0); // pulled, not recomputed
    await gw.settle();
    await expectNoPinnedBlocks(cluster!);

    const stored = (await (await gw.fetch(`http://gateway.test/v1/responses/${data.id}`)).json()) as Json;
    // The SDK adds `output_text` (a convenience getter) to what it parsed.
    const { output_text: _text, ...sent } = JSON.parse(JSON.stringify(data)) as Json;
    expect(stored).toEqual(sent);
  });

  it("streamed: the SDK's events in order, every response object with the gateway's id, the final one stored", async () => {
    const gw = await start();
    const stream = openai(gw).responses.stream({ model: MODEL, input: PROMPT, max_output_tokens: 5 });
    const types: string[] = [];
    const ids = new Set<string>();
    stream.on("event", (e) => {
      types.push(e.type);
      if ("response" in e) ids.add(e.response.id);
    });
    const final = await stream.finalResponse();
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    expect(types).toContain("response.output_text.delta");
    expect([...ids]).toEqual([final.id]);
    expect(final.id).toMatch(/^resp_/);
    expect((final as Json).store).toBe(true);
    await gw.settle(); // the store write runs after the last event
    const stored = (await (await gw.fetch(`http://gateway.test/v1/responses/${final.id}`)).json()) as Json;
    expect(stored.output_text ?? stored.output[0].content[0].text).toBe(final.output_text);
    await expectNoPinnedBlocks(cluster!);
  });

  it("previous_response_id: the engine gets the whole conversation; any isolate can continue it; DELETE forgets it", async () => {
    const gw = await start();
    const first = await openai(gw).responses.create({ model: MODEL, input: "hello there", max_output_tokens: 3 });
    // A second gateway instance: another isolate, no memory shared with the first.
    const other = testGateway(httpPairConfig(cluster!), { RESPONSES: env.RESPONSES });
    const second = await openai(other).responses.create({ model: MODEL, input: [{ role: "user", content: "and then?" }], previous_response_id: first.id, max_output_tokens: 3 });
    expect(second.previous_response_id).toBe(first.id);
    const last = (await responsesReceived("decode")).at(-1)!.body as Json;
    expect(last.previous_response_id).toBeUndefined();
    expect(last.store).toBe(false);
    expect(last.input).toEqual([
      { type: "message", role: "user", content: "hello there" },
      ...JSON.parse(JSON.stringify(first.output)),
      { type: "message", role: "user", content: "and then?" },
    ]);

    const del = await gw.fetch(`http://gateway.test/v1/responses/${first.id}`, { method: "DELETE" });
    expect(await del.json()).toEqual({ id: first.id, object: "response.deleted", deleted: true });
    const gone = await gw.fetch(`http://gateway.test/v1/responses/${first.id}`);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as Json).error.code).toBe("response_not_found");
    const cont = await post(gw, "/v1/responses", { model: MODEL, input: "x", previous_response_id: first.id });
    expect(cont.status).toBe(404);
    expect(((await cont.json()) as Json).error).toMatchObject({ code: "response_not_found", param: "previous_response_id" });
  });

  it("store: false keeps nothing and says so", async () => {
    const gw = await start();
    const r = await openai(gw).responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 2, store: false });
    expect((r as Json).store).toBe(false);
    expect((await gw.fetch(`http://gateway.test/v1/responses/${r.id}`)).status).toBe(404);
  });

  it("a stored response is its API key's: another key gets 404", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway({ ...httpPairConfig(cluster), auth: { data_plane: "api_keys" } }, { RESPONSES: env.RESPONSES, API_KEYS: "key-a,key-b" });
    const a = await post(gw, "/v1/responses", { model: MODEL, input: PROMPT, max_output_tokens: 2 }, { headers: { authorization: "Bearer key-a" } });
    const { id } = (await a.json()) as Json;
    expect((await gw.fetch(`http://gateway.test/v1/responses/${id}`, { headers: { authorization: "Bearer key-a" } })).status).toBe(200);
    expect((await gw.fetch(`http://gateway.test/v1/responses/${id}`, { headers: { authorization: "Bearer key-b" } })).status).toBe(404);
    const cont = await post(gw, "/v1/responses", { model: MODEL, input: "x", previous_response_id: id }, { headers: { authorization: "Bearer key-b" } });
    expect(cont.status).toBe(404);
  });

  it.each([
    [{ model: MODEL, input: "x", background: true }, 400, "unsupported_parameter", "background"],
    [{ model: MODEL, input: "x", conversation: "conv_1" }, 400, "unsupported_parameter", "conversation"],
    [{ model: MODEL, input: [] }, 400, "invalid_request", "input"],
    [{ model: MODEL, input: "x", max_output_tokens: 0 }, 400, "invalid_request", "max_output_tokens"],
    [{ model: "nope", input: "x" }, 404, "model_not_found", "model"],
  ])("refused before any engine work: %j -> %i %s", async (body, status, code, param) => {
    const gw = await start();
    const r = await post(gw, "/v1/responses", body);
    expect(r.status).toBe(status);
    expect(((await r.json()) as Json).error).toMatchObject({ code, param });
    expect((await cluster!.stats("prefill")).generateRequests + (await cluster!.stats("decode")).generateRequests).toBe(0);
  });
});
