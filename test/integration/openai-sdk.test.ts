// The official OpenAI SDK against the Worker, over the HTTP PD path to sim vLLM OpenAI servers:
// chat and completions, streamed and not, n=1 (prefill runs, KV handoff relayed) and n=3
// (prefill skipped, ARCHITECTURE decision 1); pd-reference T24.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, httpPairConfig, httpPairSpecs, MODEL, NIXL_TAG, openai, openaiReceived } from "./openai-fixtures.js";
import { tokenize } from "../../sim/tokens.js";

const PROMPT = "the quick brown fox jumps over the lazy dog";
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start() {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  return testGateway(httpPairConfig(cluster));
}

/** Prefill ran once with the sanitised, tagged body, and decode pulled the handoff. */
async function expectOnePrefillRelay(c: TestCluster, requestId: string) {
  const [p] = await openaiReceived(c, "prefill");
  const [d] = await openaiReceived(c, "decode");
  expect((await openaiReceived(c, "prefill")).length).toBe(1);
  expect(p!.requestId).toBe(requestId);
  expect(d!.requestId).toBe(requestId);
  const pb = p!.body as Record<string, unknown>;
  expect(pb.stream).toBe(false);
  expect(pb.stream_options).toBeUndefined();
  expect(pb.kv_transfer_params).toEqual(NIXL_TAG);
  // The NIXL handoff exactly as the sim's prefill engine serialises it, key order included.
  const db = d!.body as Record<string, unknown>;
  const got = db.kv_transfer_params as Record<string, unknown>;
  const expected = {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: got.remote_block_ids,
    remote_engine_id: "prefill-eng",
    remote_request_id: requestId,
    remote_host: "127.0.0.1",
    remote_port: Number(new URL(c.url("prefill")).port),
    tp_size: 1,
  };
  expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
  const [ps, ds] = [await c.stats("prefill"), await c.stats("decode")];
  expect(ps.kvPullsServed).toBe(1);
  expect(ds.promptTokensComputed).toBe(0); // decode pulled the KV, it did not recompute
  expect(ds.kvRecomputes).toBe(0);
  return { prefillBody: pb, decodeBody: db };
}

async function expectNoPrefill(c: TestCluster) {
  const p = await c.stats("prefill");
  expect(p.generateRequests).toBe(0);
  expect(p.promptTokensComputed).toBe(0);
  const [d] = await openaiReceived(c, "decode");
  expect((d!.body as Record<string, unknown>).kv_transfer_params).toBeUndefined();
  return d!.body as Record<string, unknown>;
}

describe("chat completions", () => {
  it("n=1, not streamed: one sanitised prefill POST, the handoff relayed, usage, x-pd-prefill: ran", async () => {
    const gw = await start();
    const { data, response } = await openai(gw, { "x-request-id": "chat-1" })
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 6, seed: 3, temperature: 0.2 })
      .withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("ran");
    expect(response.headers.get("x-request-id")).toBe("chat-1");
    expect(response.headers.get("content-encoding")).toBeNull();
    expect(data.object).toBe("chat.completion");
    expect(data.choices.map((c) => c.index)).toEqual([0]);
    expect(data.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(data.usage).toMatchObject({ prompt_tokens: tokenize(PROMPT).length });
    const { prefillBody, decodeBody } = await expectOnePrefillRelay(cluster!, "chat-1");
    expect(prefillBody).toMatchObject({ max_tokens: 1, seed: 3, temperature: 0.2 });
    expect(decodeBody).toMatchObject({ max_tokens: 6, seed: 3, temperature: 0.2 });

    await gw.settle();
    expect(gw.metrics.ofType("pd_decision")).toMatchObject([{ surface: "openai", connectorMode: "nixl", prefill: "ran", kvInjection: "relayed", n: 1, prefillEngine: "prefill", decodeEngine: "decode" }]);
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision!.prefillMs).toBeGreaterThanOrEqual(0);
    expect(decision!.kvTransferMs).toBeGreaterThanOrEqual(0); // the handoff was relayed: timed as over gRPC
    expect(gw.metrics.ofType("engine_outcome").map((e) => [e.leg, e.status])).toEqual([["prefill", 200], ["decode", 200]]);
    expect(gw.metrics.ofType("request")).toMatchObject([{ surface: "openai", endpoint: "/v1/chat/completions", backend: "pd", streaming: false, status: 200 }]);
    expect(gw.metrics.ofType("kv_transfer_failure")).toHaveLength(0);
    const [p, d] = [await cluster!.stats("prefill"), await cluster!.stats("decode")];
    expect(p.streamsCancelled + d.streamsCancelled).toBe(0);
    await expectNoPinnedBlocks(cluster!);
  });

  it("T24: n=1 streamed with max_completion_tokens, max_tokens, min_tokens, stream_options -> sanitised prefill", async () => {
    const gw = await start();
    const stream = await openai(gw, { "x-request-id": "t24-stream" }).chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: PROMPT }],
      max_completion_tokens: 64,
      max_tokens: 64,
      min_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    } as never);
    const chunks = [];
    for await (const c of stream as unknown as AsyncIterable<{ choices: { index: number; delta: { content?: string } }[]; usage?: { completion_tokens: number } | null }>) chunks.push(c);
    expect(chunks.at(-1)!.usage?.completion_tokens).toBeGreaterThanOrEqual(5);
    expect(new Set(chunks.flatMap((c) => c.choices.map((x) => x.index)))).toEqual(new Set([0]));
    const { prefillBody, decodeBody } = await expectOnePrefillRelay(cluster!, "t24-stream");
    expect(prefillBody.max_completion_tokens).toBe(1);
    expect(prefillBody).not.toHaveProperty("max_tokens");
    expect(prefillBody).not.toHaveProperty("min_tokens");
    expect(decodeBody).toMatchObject({ max_completion_tokens: 64, max_tokens: 64, min_tokens: 5, stream: true, stream_options: { include_usage: true } });
    await gw.settle();
    const [sc] = gw.metrics.ofType("stream_complete");
    expect(sc).toMatchObject({ surface: "openai", endpoint: "/v1/chat/completions" });
    expect(sc!.ttftMs).toBeGreaterThanOrEqual(0);
    expect(sc!.outputTokens).toBe(chunks.at(-1)!.usage!.completion_tokens);
    expect(gw.metrics.ofType("request")).toMatchObject([{ streaming: true, status: 200 }]);
    await expectNoPinnedBlocks(cluster!);
  });

  it.each([false, true])("T24: n=3 (stream=%s): no prefill POST, decode gets the client's body, choices 0..2", async (stream) => {
    const gw = await start();
    const client = openai(gw);
    const indexes = new Set<number>();
    let header: string | null = null;
    if (stream) {
      const { data, response } = await client.chat.completions
        .create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], n: 3, max_tokens: 5, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      header = response.headers.get("x-pd-prefill");
      let usage;
      for await (const c of data) {
        c.choices.forEach((x) => indexes.add(x.index));
        if (c.usage) usage = c.usage;
      }
      expect(usage).toBeDefined();
    } else {
      const { data, response } = await client.chat.completions
        .create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], n: 3, max_tokens: 5 })
        .withResponse();
      header = response.headers.get("x-pd-prefill");
      data.choices.forEach((x) => indexes.add(x.index));
      expect(data.usage?.completion_tokens).toBeGreaterThan(0);
    }
    expect(header).toBe("skipped; reason=fanout");
    expect([...indexes].sort()).toEqual([0, 1, 2]);
    const decodeBody = await expectNoPrefill(cluster!);
    expect(decodeBody).toMatchObject({ n: 3, max_tokens: 5 });
    await gw.settle();
    const [decision] = gw.metrics.ofType("pd_decision");
    expect(decision).toMatchObject({ prefill: "skipped", skipReason: "fanout", kvInjection: "none", n: 3, connectorMode: "nixl" });
    expect(decision!.prefillMs).toBeUndefined();
    expect(gw.metrics.ofType("engine_outcome").map((e) => e.leg)).toEqual(["decode"]);
    if (stream) expect(gw.metrics.ofType("stream_complete")[0]!.ttftMs).toBeGreaterThanOrEqual(0);
  });
});

describe("completions", () => {
  it.each([false, true])("n=1 (stream=%s): prefill runs and the handoff is relayed", async (stream) => {
    const gw = await start();
    const client = openai(gw, { "x-request-id": `cmpl-${stream}` });
    let text = "";
    if (stream) {
      const s = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 6, stream: true, stream_options: { include_usage: true } });
      for await (const c of s) text += c.choices[0]?.text ?? "";
    } else {
      const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 6 });
      expect(r.choices.map((c) => c.index)).toEqual([0]);
      expect(r.usage?.prompt_tokens).toBe(tokenize(PROMPT).length);
      text = r.choices[0]!.text;
    }
    expect(text.length).toBeGreaterThan(0);
    const { prefillBody } = await expectOnePrefillRelay(cluster!, `cmpl-${stream}`);
    expect(prefillBody.max_tokens).toBe(1);
    await expectNoPinnedBlocks(cluster!);
  });

  it.each([false, true])("n=3 (stream=%s): prefill skipped, choices 0..2, usage", async (stream) => {
    const gw = await start();
    const client = openai(gw);
    const indexes = new Set<number>();
    if (stream) {
      const s = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, n: 3, stream: true, stream_options: { include_usage: true } });
      let usage;
      for await (const c of s) {
        c.choices.forEach((x) => indexes.add(x.index));
        if (c.usage) usage = c.usage;
      }
      expect(usage).toBeDefined();
    } else {
      const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, n: 3 });
      r.choices.forEach((x) => indexes.add(x.index));
      expect(r.usage).toBeDefined();
    }
    expect([...indexes].sort()).toEqual([0, 1, 2]);
    await expectNoPrefill(cluster!);
  });

  it("a batch of prompts is fan-out too: no prefill POST (each prompt would pull the one handoff)", async () => {
    const gw = await start();
    const { data, response } = await openai(gw).completions.create({ model: MODEL, prompt: ["one prompt", "another prompt"], max_tokens: 3 }).withResponse();
    expect(response.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    expect(data.choices.map((c) => c.index).sort()).toEqual([0, 1]);
    await expectNoPrefill(cluster!);
    await expectNoPinnedBlocks(cluster!);
  });
});

it("unknown fields reach decode untouched, and the client's x-request-id reaches both legs", async () => {
  const gw = await start();
  await openai(gw, { "x-request-id": "vendor-1" }).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 3, vendor_option: { keep: [1, "two"] } } as never);
  const [p] = await openaiReceived(cluster!, "prefill");
  const [d] = await openaiReceived(cluster!, "decode");
  expect((p!.body as Record<string, unknown>).vendor_option).toEqual({ keep: [1, "two"] });
  expect((d!.body as Record<string, unknown>).vendor_option).toEqual({ keep: [1, "two"] });
  expect([p!.headers?.["x-request-id"], d!.headers?.["x-request-id"]]).toEqual(["vendor-1", "vendor-1"]);
  expect(p!.headers?.authorization).toBeUndefined();
});

it("GET /v1/models lists every configured model", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  const gw = testGateway(httpPairConfig(cluster, { models: { "grpc-only": { regular: [{ url: "http://127.0.0.1:1", transport: "connect" }] } } }));
  const page = await openai(gw).models.list();
  expect(page.data.map((m) => m.id)).toEqual(["grpc-only", MODEL]);
  // A VllmEngine-only model is served on the OpenAI surface too: the gateway tokenizes.
  expect(page.data.map((m) => (m as unknown as { surfaces: string[] }).surfaces)).toEqual([["openai", "engine"], ["openai"]]);
});

it("Mooncake with an engine id: the gateway mints a transfer id, decode pulls from the bootstrap address", async () => {
  cluster = await startTestCluster({
    engines: httpPairSpecs({ kvConnector: "MooncakeConnector", kvEngineId: "eng", bootstrapPort: 0 }, { kvConnector: "MooncakeConnector" }),
  });
  const bootstrapPort = cluster.engine("prefill").bootstrapPort!;
  const gw = testGateway(httpPairConfig(cluster, { prefill: { kv_connector: "MooncakeConnector", kv_engine_id: "eng", bootstrap_port: bootstrapPort } }));
  const r = await openai(gw).completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4 });
  expect(r.choices).toHaveLength(1);
  const [p] = await openaiReceived(cluster, "prefill");
  const [d] = await openaiReceived(cluster, "decode");
  const tag = (p!.body as Record<string, unknown>).kv_transfer_params as Record<string, unknown>;
  expect(Object.keys(tag)).toEqual(["do_remote_decode", "do_remote_prefill", "transfer_id"]);
  expect(tag.transfer_id).toMatch(/^xfer-[0-9a-f-]{36}$/);
  expect((d!.body as Record<string, unknown>).kv_transfer_params).toEqual({
    do_remote_decode: false,
    do_remote_prefill: true,
    transfer_id: tag.transfer_id,
    remote_engine_id: "eng",
    remote_bootstrap_addr: `http://127.0.0.1:${bootstrapPort}`,
  });
  expect((await cluster.stats("prefill")).kvPullsServed).toBe(1);
  expect((await cluster.stats("decode")).promptTokensComputed).toBe(0);
  await gw.settle();
  expect(gw.metrics.ofType("pd_decision")).toMatchObject([{ connectorMode: "mooncake", kvInjection: "minted", prefill: "ran" }]);
  await expectNoPinnedBlocks(cluster);
});

it("x-pd-override is ignored unless the config allows it", async () => {
  const gw = await start();
  const { response } = await openai(gw, { "x-pd-override": "force-prefill" })
    .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], n: 2, max_tokens: 2 })
    .withResponse();
  expect(response.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
  expect((await cluster!.stats("prefill")).generateRequests).toBe(0);
});
