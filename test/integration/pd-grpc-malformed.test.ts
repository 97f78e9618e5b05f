// Engines answering with bytes a real servicer never sends: the gateway maps them to an error
// for the client (never a crash or a hang) and keeps serving.
import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { testGateway } from "../support/gateway.js";
import { startTestCluster, eventually, type TestCluster } from "../support/sim.js";
import { expectNoPinnedBlocks, generate, pairConfig, pairSpecs } from "../support/pd-fixtures.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe.each(["garbage", "truncated"] as const)("a %s Generate response", (kind) => {
  it.each(["connect", "grpc-web"] as const)("from the prefill engine over %s -> prefill error, decode never sent", async (transport) => {
    cluster = await startTestCluster({ engines: pairSpecs() });
    await cluster.setFaults("prefill", { malformedResponse: kind });
    const gw = testGateway({ ...pairConfig(cluster, { transport }), retry: { disabled: true } });
    const out = await generate(gw, { requestId: `bad-${kind}`, input: { case: "text", value: "broken bytes" } });
    expect(out.error).toBeDefined();
    expect(out.error!.code).not.toBe(Code.Unknown);
    expect(out.error!.metadata.get("x-gateway-error-code")).toMatch(/^prefill_/);
    expect((await cluster.stats("decode")).generateRequests).toBe(0);
    // The gateway still serves the next request.
    await cluster.setFaults("prefill", []);
    const next = await generate(gw, { requestId: `ok-${kind}`, input: { case: "text", value: "fine bytes" } });
    expect(next.error).toBeUndefined();
  });

  it("from the decode engine -> decode error; the prefill's blocks are not left pinned", async () => {
    cluster = await startTestCluster({ engines: pairSpecs({ leaseMs: 500 }) });
    await cluster.setFaults("decode", { malformedResponse: kind });
    const gw = testGateway({ ...pairConfig(cluster), retry: { disabled: true } });
    const out = await generate(gw, { requestId: `bad-d-${kind}`, input: { case: "text", value: "broken decode" } });
    expect(out.error?.metadata.get("x-gateway-error-code")).toBe("decode_worker_failed_to_start");
    await gw.settle();
    // This decode engine never parsed the request, so only the lease frees the handoff.
    await eventually(() => expectNoPinnedBlocks(cluster!), 3_000);
  });
});
