// One deadline per request (issue 32): a hung prefill engine once kept a client waiting five
// prefill timeouts on the same engine. Now every attempt fits in `retry.deadline_ms`, an engine
// that timed out is never tried again for the request, and when no engine is left the client
// gets that timeout, naming the engine, not `no_healthy_engine`: a breaker the timeout opened
// (or re-opened from half-open) does not hide it.
import { afterEach, describe, expect, it } from "vitest";
import { testGateway, type TestGateway } from "../support/gateway.js";
import { startTestCluster, type TestCluster } from "../support/sim.js";
import { FAST, generate, MODEL } from "../support/pd-fixtures.js";
import type { EngineSpec } from "../../sim/types.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const PREFILL_TIMEOUT_MS = 1_500;
/** Slack for the gateway's own work and the test's round trips on a busy machine. */
const SLACK_MS = 1_000;

const engine = (name: string, role: EngineSpec["role"]): EngineSpec => ({ name, role, kvConnector: "NixlConnector", kvEngineId: name, model: MODEL, port: 0, latency: FAST });

function config(c: TestCluster, prefill: string[], o: { deadlineMs: number; transport?: string; breaker?: Record<string, unknown> }) {
  const transport = o.transport ?? "connect";
  return {
    models: {
      [MODEL]: {
        prefill: prefill.map((name) => ({ name, url: c.url(name), transport })),
        decode: [{ name: "d0", url: c.url("d0"), transport }],
      },
    },
    pd: { engine_info_ttl_ms: 0, prefill_timeout_ms: PREFILL_TIMEOUT_MS },
    retry: { deadline_ms: o.deadlineMs },
    ...(o.breaker ? { breaker: o.breaker } : {}),
  };
}

const hang = { hang: true } as const;

/** The Generate requests an engine received, by engine-side request id. */
async function generateIds(name: string): Promise<string[]> {
  return (await cluster!.stats(name)).recent.filter((r) => r.method === "Generate" || r.surface === "openai").map((r) => r.requestId ?? "");
}

async function timed<T>(f: () => Promise<T>): Promise<{ out: T; ms: number }> {
  const t0 = Date.now();
  const out = await f();
  return { out, ms: Date.now() - t0 };
}

async function openaiCompletion(gw: TestGateway, requestId: string) {
  const res = await gw.fetch("http://gateway.test/v1/completions", {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify({ model: MODEL, prompt: "a prompt to prefill", max_tokens: 4 }),
  });
  return { status: res.status, code: res.headers.get("x-gateway-error-code"), body: (await res.json()) as { error?: { message: string; code: string } } };
}

describe("a hung prefill engine, one deadline per request", () => {
  it("the only prefill engine hangs: one try, then prefill_timeout naming it, well within the deadline (Connect)", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", hang);
    const gw = testGateway(config(cluster, ["p0"], { deadlineMs: 20_000 }));
    const { out, ms } = await timed(() => generate(gw, { requestId: "hung-1", input: { case: "text", value: "prefill me" } }));
    expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_timeout");
    expect(out.error?.rawMessage).toContain("prefill engine 'p0'");
    expect(ms).toBeGreaterThanOrEqual(PREFILL_TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(PREFILL_TIMEOUT_MS + SLACK_MS); // not 5 x the prefill timeout, nor 2 x
    expect(await generateIds("p0")).toEqual(["hung-1"]);
    expect((await cluster.stats("d0")).generateRequests).toBe(0);
  });

  it("the same over OpenAI HTTP engines: 504 prefill_timeout, the engine tried once", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", hang);
    const gw = testGateway(config(cluster, ["p0"], { deadlineMs: 20_000, transport: "openai-http" }));
    const { out, ms } = await timed(() => openaiCompletion(gw, "hung-http"));
    expect(out.status).toBe(504);
    expect(out.code).toBe("prefill_timeout");
    expect(out.body.error?.message).toContain("prefill engine 'p0'");
    expect(ms).toBeLessThan(PREFILL_TIMEOUT_MS + SLACK_MS);
    expect((await cluster.stats("p0")).generateRequests).toBe(1);
  });

  it("a hung engine beside a healthy one: every request is served, none tries the hung engine twice", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", hang);
    const gw = testGateway(config(cluster, ["p0", "p1"], { deadlineMs: 20_000 }));
    for (let i = 0; i < 3; i++) {
      const { out, ms } = await timed(() => generate(gw, { requestId: `mixed${i}x`, input: { case: "text", value: `prompt ${i}` } }));
      expect(out.error).toBeUndefined();
      expect(ms).toBeLessThan(PREFILL_TIMEOUT_MS + SLACK_MS);
    }
    const onHung = await generateIds("p0");
    expect(onHung.length).toBeGreaterThanOrEqual(1); // round-robin sent first attempts there
    expect(new Set(onHung.map((id) => id.replace(/-\d+$/, ""))).size).toBe(onHung.length);
    expect((await cluster.stats("p1")).generateRequests).toBe(3);
  });

  it("every prefill engine hangs: each tried once, the retry cut to the deadline, the client answered within it", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("p1", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", hang);
    await cluster.setFaults("p1", hang);
    const deadlineMs = 2 * PREFILL_TIMEOUT_MS + 500; // room for one retry, not a whole second timeout
    const gw = testGateway(config(cluster, ["p0", "p1"], { deadlineMs }));
    const { out, ms } = await timed(() => generate(gw, { requestId: "all-hung", input: { case: "text", value: "prefill me" } }));
    expect(out.error?.metadata.get("x-gateway-error-code")).toBe("prefill_timeout");
    expect(ms).toBeGreaterThan(PREFILL_TIMEOUT_MS + 1_000); // the retry ran ...
    expect(ms).toBeLessThan(deadlineMs + SLACK_MS); // ... within what was left of the deadline
    expect(out.error?.rawMessage).toMatch(/did not finish within \d+ ms \(prefill engine 'p[01]'\)/);
    const ids = [...(await generateIds("p0")), ...(await generateIds("p1"))].sort();
    expect(ids).toEqual(["all-hung", "all-hung-2"]);
  });

  it("the timeout opens (or re-opens a half-open) breaker: the client still gets prefill_timeout, and the next one hears why", async () => {
    cluster = await startTestCluster({ engines: [engine("p0", "prefill"), engine("d0", "decode")] });
    await cluster.setFaults("p0", hang);
    const gw = testGateway(config(cluster, ["p0"], { deadlineMs: 20_000, breaker: { failure_threshold: 1, timeout_secs: 1 } }));
    const first = await generate(gw, { requestId: "opens", input: { case: "text", value: "x" } });
    expect(first.error?.metadata.get("x-gateway-error-code")).toBe("prefill_timeout");
    expect(gw.isolate.breakers.state("p0")?.state).toBe("open");
    // While open: no engine can take it, and the client is told which and why.
    const refused = await generate(gw, { requestId: "refused", input: { case: "text", value: "x" } });
    expect(refused.error?.metadata.get("x-gateway-error-code")).toBe("no_healthy_engine");
    expect(refused.error?.rawMessage).toContain("'p0': circuit breaker open");
    // Half-open after its timeout: the next request is let through, hangs, and re-opens it.
    await new Promise((r) => setTimeout(r, 1_100));
    const probe = await generate(gw, { requestId: "half-open", input: { case: "text", value: "x" } });
    expect(probe.error?.metadata.get("x-gateway-error-code")).toBe("prefill_timeout");
    expect(probe.error?.rawMessage).toContain("prefill engine 'p0'");
    expect(gw.isolate.breakers.state("p0")?.state).toBe("open");
    expect(await generateIds("p0")).toEqual(["opens", "half-open"]);
  });
});
