// Several clusters in one sim: a decode engine cannot pull a handoff from another cluster's
// prefill engine (refused, counted as crossClusterPulls); each cluster has its own network
// delay; a killed cluster refuses new connections while the other serves on.
import { afterEach, describe, expect, it } from "vitest";
import { startCluster } from "../../../sim/cluster.js";
import { SpecError, validateClusterSpec } from "../../../sim/spec.js";
import type { EngineSpec, RunningCluster } from "../../../sim/types.js";
import { FAST, connectClient, generate, prefillInit, stats } from "./helpers.js";

const PROMPT = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
const engine = (name: string, role: EngineSpec["role"], cluster: string): EngineSpec => ({ name, role, kvConnector: "NixlConnector", kvEngineId: `${name}-kv`, latency: FAST, cluster });

let c: RunningCluster | undefined;
afterEach(async () => {
  await c?.close();
  c = undefined;
});

const twoClusters = (delays: { a?: number; b?: number } = {}) =>
  startCluster({
    clusters: { a: { networkDelayMs: delays.a ?? 0 }, b: { networkDelayMs: delays.b ?? 0 } },
    engines: [engine("pa", "prefill", "a"), engine("da", "decode", "a"), engine("pb", "prefill", "b"), engine("db", "decode", "b")],
  });

async function pdPair(cluster: RunningCluster, prefill: string, decode: string, id: string) {
  const r = await generate(connectClient(cluster.engine(prefill)), prefillInit(id, PROMPT));
  const kv = r.completes[0]!.kvTransferParamsJson!;
  return generate(connectClient(cluster.engine(decode)), {
    requestId: id, input: { case: "text", value: PROMPT }, samplingParams: { maxTokens: 4, ignoreEos: true }, stream: true, kvTransferParamsJson: kv,
  });
}

describe("sim clusters", () => {
  it("a pull inside one cluster is served; across clusters it is refused and counted on the prefill engine", async () => {
    c = await twoClusters();
    await pdPair(c, "pa", "da", "same");
    expect((await stats(c.engine("pa"))).kvPullsServed).toBe(1);
    expect((await stats(c.engine("da"))).kvPullsCompleted).toBe(1);

    await pdPair(c, "pa", "db", "cross");
    const pa = await stats(c.engine("pa"));
    expect(pa.crossClusterPulls).toBe(1);
    expect(pa.cluster).toBe("a");
    // The decode engine recomputed; the handoff stays pinned until its lease.
    expect((await stats(c.engine("db"))).kvRecomputes).toBe(1);
    expect(pa.handoffsPinned).toBe(1);
  });

  it("delays requests from outside the cluster by its network delay, changeable at run time", async () => {
    c = await twoClusters({ b: 150 });
    const time = async (name: string) => {
      const t0 = performance.now();
      await generate(connectClient(c!.engine(name)), prefillInit(`t-${name}-${t0}`, "hi"));
      return performance.now() - t0;
    };
    expect(await time("pa")).toBeLessThan(100);
    expect(await time("pb")).toBeGreaterThanOrEqual(145);
    c.setNetworkDelay("b", 0);
    c.setNetworkDelay("a", 150);
    expect(await time("pb")).toBeLessThan(100);
    expect(await time("pa")).toBeGreaterThanOrEqual(145);
  });

  it("a killed cluster refuses connections; the other one serves", async () => {
    c = await twoClusters();
    await c.killCluster("b");
    await expect(fetch(`${c.engine("pb").url}/health`)).rejects.toThrow();
    await pdPair(c, "pa", "da", "alive");
    expect((await stats(c.engine("da"))).kvPullsCompleted).toBe(1);
    await expect(c.killCluster("nope")).rejects.toThrow(/no engine in cluster "nope"/);
  });

  it.each([
    [{ engines: [engine("p", "prefill", "x")] }, /engines\[0\]\.cluster: "x" is not in clusters/],
    [{ clusters: { a: { networkDelayMs: -1 } }, engines: [engine("p", "prefill", "a")] }, /clusters\.a\.networkDelayMs/],
    [{ clusters: { a: { delay: 1 } }, engines: [engine("p", "prefill", "a")] }, /clusters\.a\.delay: unknown field/],
  ])("refuses a bad spec naming the field (%#)", (spec, message) => {
    expect(() => validateClusterSpec(spec)).toThrow(SpecError);
    expect(() => validateClusterSpec(spec)).toThrow(message);
  });
});
