// The client's Abort RPC (issue 15 item 4): scoped to the caller's data-plane credential,
// bounded (at most 64 ids, x-model required) and sent only to engines of the named model.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { eventually, startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generate, MODEL, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const KEY_A = "key-a";
const KEY_B = "key-b";
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function abortError(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("Abort succeeded");
}

it("another key's Abort of a request id leaves the stream running; the owner's own Abort ends it", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { hang: true });
  const gw = testGateway({ ...pairConfig(cluster, { deferredAbortMaxMs: 100 }), auth: { data_plane: "api_keys" } }, { API_KEYS: `${KEY_A},${KEY_B}` });
  let ended = false;
  const done = generate(gw, { requestId: "shared-id", input: { case: "text", value: "a long request" }, stream: true }, { headers: bearer(KEY_A) }).finally(() => {
    ended = true;
  });
  await eventually(async () => expect((await cluster!.stats("decode")).activeRequests).toBe(1));

  await gw.engineClient().abort({ requestIds: ["shared-id"] }, { headers: { "x-model": MODEL, ...bearer(KEY_B) } });
  await sleep(300);
  expect(ended).toBe(false);
  expect((await cluster.stats("decode")).activeRequests).toBe(1);
  const foreign = (await cluster.stats("decode")).abortedRequestIds;
  expect(foreign).toHaveLength(1);
  expect(foreign[0]).toMatch(/^shared-id\.[0-9a-f]{12}$/); // B's own scoped id, not A's

  await gw.engineClient().abort({ requestIds: ["shared-id"] }, { headers: { "x-model": MODEL, ...bearer(KEY_A) } });
  await done;
  expect(ended).toBe(true);
  const decode = await cluster.stats("decode");
  expect(decode.activeRequests).toBe(0);
  expect(decode.abortedRequestIds).toHaveLength(2);
  expect(decode.abortedRequestIds[1]).not.toBe(foreign[0]);
  await gw.settle();
});

it("more than 64 ids -> 400 naming request_ids; no Abort reaches an engine", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const ids = Array.from({ length: 65 }, (_, i) => `r${i}`);
  const err = await abortError(gw.engineClient().abort({ requestIds: ids }, { headers: { "x-model": MODEL } }));
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.rawMessage).toMatch(/^request_ids: at most 64/);
  expect(err.metadata.get("x-gateway-error-code")).toBe("too_many_ids");

  const res = await gw.fetch("http://gateway.test/vllm.grpc.engine.VllmEngine/Abort", {
    method: "POST",
    headers: { "content-type": "application/json", "x-model": MODEL },
    body: JSON.stringify({ requestIds: ids }),
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toMatch(/request_ids/);
  // Exactly 64 is allowed.
  await gw.engineClient().abort({ requestIds: ids.slice(0, 64) }, { headers: { "x-model": MODEL } });
  // One RPC per engine carrying all 64 ids.
  expect((await cluster.stats("decode")).abortsReceived).toBe(1);
  expect((await cluster.stats("decode")).abortedRequestIds).toHaveLength(64);
});

it("a missing x-model -> 400 naming x-model", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway(pairConfig(cluster));
  const res = await gw.fetch("http://gateway.test/vllm.grpc.engine.VllmEngine/Abort", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ requestIds: ["x"] }),
  });
  expect(res.status).toBe(400);
  expect(res.headers.get("x-gateway-error-code")).toBe("model_required");
  expect(((await res.json()) as { message: string }).message).toMatch(/^x-model:/);
  expect((await cluster.stats("decode")).abortsReceived).toBe(0);
  expect((await cluster.stats("prefill")).abortsReceived).toBe(0);
});

it("Abort ids go only to the engines of the model in x-model", async () => {
  cluster = await startTestCluster({
    engines: [...pairSpecs(), { name: "other", role: "decode", kvConnector: "none", model: "other", latency: FAST }],
  });
  const config = pairConfig(cluster);
  const gw = testGateway({ ...config, models: { ...config.models, other: { regular: [{ name: "other", url: cluster.url("other"), transport: "connect" }] } } });
  await gw.engineClient().abort({ requestIds: ["gone-1", "gone-2"] }, { headers: { "x-model": MODEL } });
  expect((await cluster.stats("prefill")).abortedRequestIds.sort()).toEqual(["gone-1", "gone-2"]);
  expect((await cluster.stats("decode")).abortedRequestIds.sort()).toEqual(["gone-1", "gone-2"]);
  expect((await cluster.stats("other")).abortsReceived).toBe(0);

  await gw.engineClient().abort({ requestIds: ["gone-3"] }, { headers: { "x-model": "other" } });
  expect((await cluster.stats("other")).abortedRequestIds).toEqual(["gone-3"]);
  // The first call reached decode once, with both ids; the second never did.
  expect((await cluster.stats("decode")).abortsReceived).toBe(1);
});

it("a key's third Abort call while two are in flight -> 429 abort_rate_limited before its body is read; another key is not limited", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { slowAbortMs: 400 });
  const gw = testGateway({ ...pairConfig(cluster), auth: { data_plane: "api_keys" } }, { API_KEYS: `${KEY_A},${KEY_B}` });
  const abortAs = (key: string, id: string) => gw.engineClient().abort({ requestIds: [id] }, { headers: { "x-model": MODEL, ...bearer(key) } });
  const held = [abortAs(KEY_A, "a1"), abortAs(KEY_A, "a2")];
  await eventually(async () => expect((await cluster!.stats("decode")).abortsReceived).toBeGreaterThanOrEqual(1));
  const third = await abortError(abortAs(KEY_A, "a3"));
  expect(third.code).toBe(Code.ResourceExhausted);
  expect(third.metadata.get("x-gateway-error-code")).toBe("abort_rate_limited");
  // The raw answer in the Connect unary protocol: 429 with the error JSON.
  const raw = await gw.fetch("http://gateway.test/vllm.grpc.engine.VllmEngine/Abort", {
    method: "POST", headers: { "content-type": "application/json", "x-model": MODEL, ...bearer(KEY_A) }, body: "not even JSON",
  });
  expect(raw.status).toBe(429);
  expect(((await raw.json()) as { code: string }).code).toBe("resource_exhausted");
  await abortAs(KEY_B, "b1"); // B has slots of its own
  await Promise.all(held);
  await abortAs(KEY_A, "a4"); // and A's came back
  await gw.settle();
});

it("concurrent Abort calls are coalesced per engine: one RPC in flight, the next carries every id that waited", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  await cluster.setFaults("decode", { slowAbortMs: 300 });
  await cluster.setFaults("prefill", { slowAbortMs: 300 });
  const keys = ["k1", "k2", "k3", "k4", "k5", "k6"];
  const gw = testGateway({ ...pairConfig(cluster), auth: { data_plane: "api_keys" } }, { API_KEYS: keys.join(",") });
  const first = gw.engineClient().abort({ requestIds: ["first"] }, { headers: { "x-model": MODEL, ...bearer("k1") } });
  await eventually(async () => expect((await cluster!.stats("decode")).abortsReceived).toBe(1));
  // Five more calls (other keys, so no per-key limit applies) while the first RPC is in flight.
  await Promise.all([first, ...keys.slice(1).map((k) => gw.engineClient().abort({ requestIds: [`id-${k}`] }, { headers: { "x-model": MODEL, ...bearer(k) } }))]);
  for (const engine of ["decode", "prefill"] as const) {
    const stats = await cluster.stats(engine);
    expect(stats.abortsReceived).toBe(2);
    expect(stats.abortedRequestIds).toHaveLength(6);
    expect(stats.abortedRequestIds.map((id) => id.split(".")[0])).toEqual(["first", ...keys.slice(1).map((k) => `id-${k}`)]);
  }
  await gw.settle();
});

it("a key past limits.abort_ids_per_second_per_key -> 429 abort_rate_limited, no engine RPC; another key is not limited", async () => {
  cluster = await startTestCluster({ engines: pairSpecs() });
  const gw = testGateway({ ...pairConfig(cluster), auth: { data_plane: "api_keys" }, limits: { abort_ids_per_second_per_key: 64 } }, { API_KEYS: `${KEY_A},${KEY_B}` });
  const ids = (p: string) => Array.from({ length: 64 }, (_, i) => `${p}${i}`);
  await gw.engineClient().abort({ requestIds: ids("a") }, { headers: { "x-model": MODEL, ...bearer(KEY_A) } });
  const rpcs = (await cluster.stats("decode")).abortsReceived;
  const err = await abortError(gw.engineClient().abort({ requestIds: ids("b") }, { headers: { "x-model": MODEL, ...bearer(KEY_A) } }));
  expect(err.code).toBe(Code.ResourceExhausted);
  expect(err.metadata.get("x-gateway-error-code")).toBe("abort_rate_limited");
  expect(err.rawMessage).toContain("limits.abort_ids_per_second_per_key");
  expect((await cluster.stats("decode")).abortsReceived).toBe(rpcs);
  await gw.engineClient().abort({ requestIds: ids("c") }, { headers: { "x-model": MODEL, ...bearer(KEY_B) } });
  await gw.settle();
});
