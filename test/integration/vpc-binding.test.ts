// Engines behind a Workers VPC service (issue 19): an engine entry that names a binding is
// reached only through env[binding].fetch, with its private URL, on every transport and for
// both PD legs. The stand-in binding forwards each private host to a sim engine and records
// what passed through it.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { generate, MODEL, pairSpecs } from "../support/pd-fixtures.js";
import { httpPairSpecs } from "./openai-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/** A VPC service binding as the Worker sees it: fetch(url) reaches the private host. */
function standInBinding(c: TestCluster) {
  const seen: string[] = [];
  return {
    seen,
    binding: {
      fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
        const url = new URL(input instanceof Request ? input.url : String(input));
        seen.push(`${url.hostname}${url.pathname}`);
        const engine = url.hostname.replace(/\.internal$/, "");
        const target = new URL(url.pathname + url.search, c.url(engine));
        return fetch(input instanceof Request ? new Request(target, input) : target, init);
      },
    },
  };
}

const privateEngine = (name: string, transport: string) => ({ name, url: `http://${name}.internal:8000`, transport, binding: "VLLM_PRIVATE", ...(transport === "openai-http" && name === "prefill" ? { kv_connector: "NixlConnector" } : {}) });

describe.each(["connect", "grpc-web"] as const)("VllmEngine engines over %s through the binding", (transport) => {
  it("both PD legs and the prefill's discovery go through env.VLLM_PRIVATE", async () => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    const vpc = standInBinding(cluster);
    const gw = testGateway(
      { models: { [MODEL]: { prefill: [privateEngine("prefill", transport)], decode: [privateEngine("decode", transport)] } }, pd: { engine_info_ttl_ms: 0 } },
      { VLLM_PRIVATE: vpc.binding },
    );
    const out = await generate(gw, { requestId: "vpc", input: { case: "text", value: "through the tunnel" }, samplingParams: { maxTokens: 3 } }, { protocol: transport });
    expect(out.error).toBeUndefined();
    expect(out.header.get("x-pd-prefill")).toBe("ran");
    expect(vpc.seen).toEqual(expect.arrayContaining(["prefill.internal/vllm.grpc.engine.VllmEngine/GetServerInfo", "prefill.internal/vllm.grpc.engine.VllmEngine/Generate", "decode.internal/vllm.grpc.engine.VllmEngine/Generate"]));
    expect((await cluster.stats("decode")).kvPullsCompleted).toBe(1);
  });
});

it("OpenAI HTTP engines through the binding: prefill and decode POSTs", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  const vpc = standInBinding(cluster);
  const gw = testGateway(
    { models: { [MODEL]: { prefill: [privateEngine("prefill", "openai-http")], decode: [privateEngine("decode", "openai-http")] } } },
    { VLLM_PRIVATE: vpc.binding },
  );
  const res = await gw.fetch(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello over vpc" }], max_tokens: 3 }),
    }),
  );
  expect(res.status).toBe(200);
  expect(res.headers.get("x-pd-prefill")).toBe("ran");
  await res.json();
  await gw.settle();
  // The generation legs, and the model's context length (GET /v1/models, in the background): all through the binding.
  expect(vpc.seen.filter((u) => !u.endsWith("/v1/models"))).toEqual(["prefill.internal/v1/chat/completions", "decode.internal/v1/chat/completions"]);
  expect(vpc.seen.filter((u) => u.endsWith("/v1/models"))).toHaveLength(1);
});

it("an engine naming a binding the Worker lacks: /health is 503 naming the field, requests get a 5xx naming the engine", async () => {
  cluster = await startTestCluster({ engines: httpPairSpecs() });
  const gw = testGateway({ models: { [MODEL]: { prefill: [privateEngine("prefill", "openai-http")], decode: [privateEngine("decode", "openai-http")] } }, retry: { disabled: true } });
  const health = await gw.fetch("http://gateway.test/health");
  expect(health.status).toBe(503);
  expect(((await health.json()) as { errors: string[] }).errors).toEqual([
    `models.${MODEL}.prefill.0.binding: the Worker has no binding VLLM_PRIVATE (declare it in wrangler.toml vpc_services)`,
    `models.${MODEL}.decode.0.binding: the Worker has no binding VLLM_PRIVATE (declare it in wrangler.toml vpc_services)`,
  ]);
  const res = await gw.fetch(
    new Request("http://gateway.test/v1/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt: "x" }) }),
  );
  expect(res.status).toBe(502);
  expect(((await res.json()) as { error: { message: string } }).error.message).toContain("names the binding VLLM_PRIVATE");
});

describe("engines registered at run time behind the binding", () => {
  it("allowed_hosts covers the private URL; discovery and traffic go through the binding; a missing binding is a 400", async () => {
    const { adminGateway, clearRegistry } = await import("../support/admin.js");
    await clearRegistry();
    cluster = await startTestCluster({ engines: pairSpecs() });
    const vpc = standInBinding(cluster);
    const gw = adminGateway(
      {
        models: { [MODEL]: { prefill: [privateEngine("prefill", "connect")], decode: [] } },
        registry: { allowed_hosts: ["decode.internal"], snapshot_ttl_ms: 0 },
        pd: { engine_info_ttl_ms: 0 },
      },
      { env: { VLLM_PRIVATE: vpc.binding } },
    );
    const outside = await gw.admin("POST", "/admin/engines", { name: "p2", url: "http://prefill.internal:8000", binding: "VLLM_PRIVATE", model: MODEL, role: "prefill" });
    expect(outside.status).toBeGreaterThanOrEqual(400);
    expect(((await outside.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: "url" });
    const missing = await gw.admin("POST", "/admin/engines", { name: "d9", url: "http://decode.internal:8000", binding: "NOPE", model: MODEL, role: "decode" });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { param: string } }).error.param).toBe("binding");
    const created = await gw.admin("POST", "/admin/engines", { name: "d-private", url: "http://decode.internal:8000", binding: "VLLM_PRIVATE", model: MODEL, role: "decode" });
    expect(created.status).toBe(201);
    expect(vpc.seen).toEqual(expect.arrayContaining(["decode.internal/vllm.grpc.engine.VllmEngine/GetServerInfo"]));
    const { eventually } = await import("../support/sim.js");
    await eventually(async () => {
      const out = await generate(gw, { requestId: `reg-vpc-${Date.now()}`, input: { case: "text", value: "registered behind vpc" }, samplingParams: { maxTokens: 3 } });
      expect(out.error).toBeUndefined();
    }, 10_000, 50);
    expect(vpc.seen).toContain("decode.internal/vllm.grpc.engine.VllmEngine/Generate");
    await clearRegistry();
  });
});
