// Metrics on the OpenAI surface (HTTP PD executor against openai-http sim engines), read from
// the raw points passed to the METRICS binding.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type RecordingDataset } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { httpPairConfig, httpPairSpecs, openaiReceived } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const raw = (metrics: RecordingDataset, type: string) => metrics.points.filter((p) => p.blobs?.[1] === type);
const isDuration = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;

function chat(body: Record<string, unknown>): Request {
  return new Request("http://gateway.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...body }),
  });
}

describe("OpenAI surface", () => {
  it("n=1 chat: request point, prefill ran with its duration, KV params relayed and timed (as over gRPC)", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await gw.fetch(chat({ max_tokens: 4 }));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-pd-prefill")).toBe("ran");
    await res.json();
    await gw.settle();

    const requests = raw(gw.metrics, "request");
    expect(requests).toHaveLength(1);
    expect(requests[0]!.indexes).toEqual(["m"]);
    expect(requests[0]!.blobs).toEqual(["v1", "request", "openai", "/v1/chat/completions", "pd", "false", ""]);
    expect(requests[0]!.doubles![0]).toBe(200);

    const [decision] = raw(gw.metrics, "pd_decision");
    expect(decision!.blobs).toEqual(["v1", "pd_decision", "openai", "nixl", "ran", "", "relayed", "prefill", "decode", "measured", "default"]);
    expect(decision!.doubles![0]).toBe(1);
    expect(isDuration(decision!.doubles![1])).toBe(true);
    expect(isDuration(decision!.doubles![2])).toBe(true);
    expect(raw(gw.metrics, "engine_outcome").map((p) => p.blobs![3]).sort()).toEqual(["decode", "prefill"]);
    expect(raw(gw.metrics, "stream_complete")).toHaveLength(0); // not streamed
  });

  it("streamed n=2 chat: prefill skipped (NaN, NaN, reason in blobs), stream timing written", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await gw.fetch(chat({ n: 2, max_tokens: 4, stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-pd-prefill")).toBe("skipped; reason=fanout");
    await res.text();
    await gw.settle();

    const [decision] = raw(gw.metrics, "pd_decision");
    expect(decision!.blobs!.slice(2)).toEqual(["openai", "nixl", "skipped", "fanout", "none", "prefill", "decode", "prefill_skipped", "default"]);
    expect(decision!.doubles![0]).toBe(2);
    expect(decision!.doubles![1]).toBeNaN();
    expect(decision!.doubles![2]).toBeNaN();
    expect(raw(gw.metrics, "engine_outcome").map((p) => p.blobs![3])).toEqual(["decode"]);
    const [timing] = raw(gw.metrics, "stream_complete");
    expect(timing!.blobs!.slice(2, 5)).toEqual(["openai", "/v1/chat/completions", "measured"]);
    expect(isDuration(timing!.doubles![0])).toBe(true);
    expect(raw(gw.metrics, "request").map((p) => [p.blobs![5], p.doubles![0]])).toEqual([["true", 200]]);
    expect(await openaiReceived(cluster, "prefill")).toHaveLength(0);
  });

  it("an unknown model: one 404 request point indexed by the model the client named", async () => {
    cluster = await startTestCluster({ engines: httpPairSpecs() });
    const gw = testGateway(httpPairConfig(cluster));
    const res = await gw.fetch(chat({ model: "no-such-model" }));
    expect(res.status).toBe(404);
    await res.text();
    await gw.settle();
    expect(gw.metrics.points).toHaveLength(1);
    const [request] = gw.metrics.points;
    expect(request!.indexes).toEqual(["no-such-model"]);
    expect(request!.blobs).toEqual(["v1", "request", "openai", "/v1/chat/completions", "none", "false", "model_not_found"]);
    expect(request!.doubles![0]).toBe(404);
  });
});
