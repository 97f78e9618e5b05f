// The pure parts of a health run: targets, the cron's "due" rule, and applying a round of
// probe results through the health state machine.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/load.js";
import { newHealth, type EngineHealth } from "../../../src/routing/health-state.js";
import { applyProbeResults, configProbeTargets, probeTargets, registryPlan, repointedTargets, runIsDue } from "../../../src/routing/health-run.js";
import type { ProbeTarget, RegistryEngine } from "../../../src/routing/registry-types.js";

const config = parseConfig(
  JSON.stringify({
    models: {
      a: { prefill: [{ name: "p", url: "http://p:1" }], decode: [{ url: "http://d:1", transport: "grpc-web" }] },
      b: { regular: [{ name: "p", url: "http://other:1" }, { name: "h", url: "http://h:1", transport: "openai-http" }], encode: [{ name: "e", url: "http://e:1" }] },
    },
  }),
);

const reg = (id: string, status: RegistryEngine["status"] = "active"): RegistryEngine => ({
  id, model: "a", role: "decode", url: `http://${id}:1`, transport: "connect", labels: {}, status, discovered: {},
  created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z",
});

describe("repointedTargets", () => {
  const t = (name: string, url: string, transport: ProbeTarget["transport"] = "connect"): ProbeTarget => ({ name, url, transport });
  it.each([
    { case: "same plan", prev: [t("a", "http://a:1")], next: [t("a", "http://a:1")], want: [] },
    { case: "new URL", prev: [t("a", "http://a:1")], next: [t("a", "http://a:2")], want: ["a"] },
    { case: "new transport", prev: [t("a", "http://a:1")], next: [t("a", "http://a:1", "openai-http")], want: ["a"] },
    { case: "engine added", prev: [], next: [t("a", "http://a:1")], want: [] },
    { case: "engine removed", prev: [t("a", "http://a:1")], next: [], want: [] },
    { case: "only the moved one", prev: [t("a", "http://a:1"), t("b", "http://b:1")], next: [t("a", "http://a:1"), t("b", "http://b:9")], want: ["b"] },
  ])("$case", ({ prev, next, want }) => {
    expect(repointedTargets(prev, next)).toEqual(want);
  });
});

describe("targets", () => {
  it("lists every config engine once per name, first URL winning", () => {
    expect(configProbeTargets(config.models)).toEqual([
      { name: "p", url: "http://p:1", transport: "connect" },
      { name: "a/decode-0", url: "http://d:1", transport: "grpc-web" },
      { name: "e", url: "http://e:1", transport: "connect" },
      { name: "h", url: "http://h:1", transport: "openai-http" },
    ]);
  });

  it("adds active registry engines whose id no config engine uses; draining ones are not probed", () => {
    const plan = registryPlan(config);
    expect(plan.health).toEqual(config.health);
    expect(plan.breaker).toEqual(config.breaker);
    const names = probeTargets(plan, [reg("r1"), reg("r2", "draining"), reg("p")]).map((t) => t.name);
    expect(names).toEqual(["p", "a/decode-0", "e", "h", "r1"]);
  });
});

describe("runIsDue", () => {
  it.each([
    [undefined, 60, 0, true],
    [0, 60, 53_999, false],
    [0, 60, 54_000, true], // 0.9 interval
    [0, 60, 120_000, true],
    [0, 5, 4_499, false],
    [0, 5, 4_500, true],
  ])("last=%s interval=%s now=%s -> %s", (last, interval, now, due) => {
    expect(runIsDue(last, interval, now)).toBe(due);
  });
});

describe("applyProbeResults", () => {
  const s = { success_threshold: 2, failure_threshold: 2 };
  const targets = [
    { name: "a", url: "http://a", transport: "connect" as const },
    { name: "b", url: "http://b", transport: "openai-http" as const },
  ];
  const ready: EngineHealth = { ...newHealth(), status: "ready", consecutiveSuccesses: 2 };

  it("feeds each result through the state machine and reports status changes only", () => {
    const prev = new Map<string, EngineHealth>([["a", { ...ready, consecutiveFailures: 1, consecutiveSuccesses: 0 }], ["b", ready]]);
    const { next, transitions } = applyProbeResults(
      prev,
      targets,
      [
        { name: "a", url: "http://a", ok: false, error: "down" },
        { name: "b", url: "http://b", ok: true },
      ],
      s,
      1000,
    );
    expect(transitions).toEqual([{ engine: "a", from: "ready", to: "not_ready", error: "down" }]);
    expect(next.get("a")).toMatchObject({ status: "not_ready", consecutiveFailures: 2, lastError: "down", lastProbeAt: 1000 });
    expect(next.get("b")).toMatchObject({ status: "ready", consecutiveSuccesses: 3, lastProbeAt: 1000 });
    // The previous map is not mutated.
    expect(prev.get("a")!.consecutiveFailures).toBe(1);
  });

  it("starts unknown engines from pending", () => {
    const { next, transitions } = applyProbeResults(new Map(), targets, [{ name: "a", url: "http://a", ok: true }], s, 1);
    expect(next.get("a")).toMatchObject({ status: "pending", consecutiveSuccesses: 1, pendingProbes: 1 });
    expect(transitions).toEqual([]);
    expect(next.has("b")).toBe(false);
  });

  it("drops results for engines removed or re-pointed meanwhile, and prunes state of non-targets", () => {
    const prev = new Map<string, EngineHealth>([["a", ready], ["gone", ready]]);
    const { next } = applyProbeResults(
      prev,
      [{ name: "a", url: "http://a-new", transport: "connect" }],
      [
        { name: "a", url: "http://a", ok: false },
        { name: "gone", url: "http://gone", ok: false },
      ],
      s,
      1,
    );
    expect([...next.keys()]).toEqual(["a"]);
    expect(next.get("a")).toBe(ready);
  });
});
