// The per-chunk verdicts of the bench report, against the relay floor measured in the same run
// (bench/relay-floor-worker): the floor each figure is shown with, and the paragraph a miss gets.
import { describe, expect, it } from "vitest";
import type { CpuCase } from "../../../bench/cpu.js";
import { FLOOR_CASES } from "../../../bench/cpu.js";
import type { BenchResult } from "../../../bench/report.js";
import { explanations, floorRatio, verdicts } from "../../../bench/verdicts.js";

const SSE = "256-token SSE stream";
const CONNECT = "256-token Connect stream";

function kase(name: string, target: string, usPerChunk: number): CpuCase {
  const perRequest = (usPerChunk * 256) / 1000;
  return { case: name, target, requests: 150, errors: 0, wallMs: 1, cpuMsPerRequest: perRequest, ticks: 1, idleCorrectionMs: 0, chunksPerRequest: 256, cpuMsPerChunk: usPerChunk / 1000 };
}

function run(cpu: CpuCase[]): BenchResult {
  return { cpu, machine: { nproc: 2 } } as unknown as BenchResult;
}

const cases = [
  kase(SSE, "gateway", 100),
  kase(SSE, "passthrough", 50),
  kase(`${SSE}, ${FLOOR_CASES.loop}`, "relay floor", 90),
  kase(`${SSE}, ${FLOOR_CASES.tee}`, "relay floor", 75),
  kase(`${SSE}, ${FLOOR_CASES.teepipe}`, "relay floor", 55),
  kase(`${SSE}, ${FLOOR_CASES.pipe}`, "relay floor", 52),
  kase(`${SSE}, sse_relay native`, "gateway", 60),
  kase(CONNECT, "gateway", 130),
  kase(CONNECT, "passthrough", 50),
  kase(`${CONNECT}, ${FLOOR_CASES.pull}`, "relay floor", 120),
  kase(`${CONNECT}, ${FLOOR_CASES.loop}`, "relay floor", 100),
  kase(`${CONNECT}, ${FLOOR_CASES.teepipe}`, "relay floor", 65),
];

describe("relay floor in the bench verdicts", () => {
  it("is the floor shape's CPU per chunk over the pass-through's on the same stream", () => {
    const r = run(cases);
    expect(floorRatio(r, SSE, "loop")).toBeCloseTo(1.8);
    expect(floorRatio(r, SSE, "tee")).toBeCloseTo(1.5);
    expect(floorRatio(r, CONNECT, "pull")).toBeCloseTo(2.4);
    expect(floorRatio(r, CONNECT, "loop")).toBeCloseTo(2.0);
    expect(floorRatio(r, SSE, "teepipe")).toBeCloseTo(1.1);
    expect(floorRatio(r, CONNECT, "teepipe")).toBeCloseTo(1.3);
  });

  it("is absent when the run has no relay-floor cases (an older result file)", () => {
    const r = run(cases.filter((c) => c.target !== "relay floor"));
    expect(floorRatio(r, SSE, "loop")).toBeUndefined();
    const sse = verdicts(r).find((v) => v.id === "ratio-sse")!;
    expect(sse.value).toBe("2.00x");
  });

  it("shows each per-chunk figure with the floor of the relay shape it is built on", () => {
    const v = verdicts(run(cases));
    expect(v.find((x) => x.id === "ratio-sse")).toMatchObject({ value: "2.00x (floor: 1.80x)", met: false });
    // The Connect stream's default relay (generate_relay native) is built on the tee.
    expect(v.find((x) => x.id === "ratio-connect")).toMatchObject({ value: "2.60x (floor: 1.30x)", met: false });
    expect(v.find((x) => x.id === "ratio-sse-native")).toMatchObject({ value: "1.20x (floor: 1.10x)", met: true });
  });

  it("explains a missed per-chunk target once, with the gateway's relays over their floors", () => {
    const text = explanations(run(cases)).filter((p) => p.startsWith("**Per-chunk relay cost"));
    expect(text).toHaveLength(1);
    expect(text[0]).toContain("1.80x on SSE and 2.00x on Connect"); // the read loop
    expect(text[0]).toContain("tee() with one branch read in JS 1.50x");
    expect(text[0]).toContain("2.40x on Connect"); // the JS-pulled body
    expect(text[0]).toContain("the other read in 50 ms batches (api/native-relay.ts, api/engine/native-tail.ts), 1.10x on SSE and 1.30x on Connect, against 1.04x for the same pipe with no copy");
    expect(text[0]).toContain('The gateway\'s inspecting SSE relay is 2.00x (1.11x its floor), `sse_relay: "native"` 1.20x (1.09x its floor), the Connect stream on the default `generate_relay: "native"` 2.60x (2.00x its floor)');
  });

  it("says nothing of the relay when both per-chunk targets are met", () => {
    const met = cases.map((c) => (c.target === "gateway" && !c.case.includes("native") ? { ...c, cpuMsPerChunk: 0.06 } : c));
    expect(explanations(run(met)).some((p) => p.startsWith("**Per-chunk relay cost"))).toBe(false);
  });
});

describe("issue 17's other targets in the bench verdicts", () => {
  const withFootprint = (gzipKiB: number, startupMs: number, gwAdded: number, ptAdded: number) =>
    ({
      cpu: cases,
      machine: { nproc: 2 },
      overhead: { targets: [{ target: "gateway", addedP50Ms: gwAdded }, { target: "passthrough", addedP50Ms: ptAdded }], ratios: {} },
      footprint: { productionBundle: { gzipBytes: gzipKiB * 1024 }, isolateStartup: { cpuMs: startupMs } },
    }) as unknown as BenchResult;

  it("reads the bundle target against the deployed bundle, start-up against wrangler check startup", () => {
    const v = verdicts(withFootprint(169.5, 10.5, 1.4, 1.15));
    expect(v.find((x) => x.id === "bundle")).toMatchObject({ value: "169.5 KiB", met: true });
    expect(v.find((x) => x.id === "startup")).toMatchObject({ value: "10.5 ms", met: true });
    const over = verdicts(withFootprint(201, 21, 1.4, 1.15));
    expect(over.find((x) => x.id === "bundle")?.met).toBe(false);
    expect(over.find((x) => x.id === "startup")?.met).toBe(false);
  });

  it("reads added p50 against the pass-through's added p50 + 0.2 ms, and explains a miss with the latency paragraph", () => {
    expect(verdicts(withFootprint(169.5, 10.5, 1.3, 1.15)).find((x) => x.id === "latency-vs-passthrough")).toMatchObject({ value: "0.15 ms", met: true });
    const missed = withFootprint(169.5, 10.5, 1.48, 1.15);
    expect(verdicts(missed).find((x) => x.id === "latency-vs-passthrough")).toMatchObject({ value: "0.33 ms", met: false });
    expect(explanations(missed).filter((p) => p.startsWith("**Added latency"))).toHaveLength(1);
  });

  it("says n/a, not met, for a run that did not measure them", () => {
    const v = verdicts(run(cases));
    for (const id of ["bundle", "startup", "latency-vs-passthrough"]) expect(v.find((x) => x.id === id)).toMatchObject({ value: "n/a", met: undefined });
  });
});

describe("issue 30's targets in the bench verdicts", () => {
  const withTokenizer = (cacheP50: number, engineP50: number) =>
    ({ cpu: cases, machine: { nproc: 2 }, tokenizer: { cacheLoadMs: { p50: cacheP50, max: 0, runs: 5 }, engineLoadMs: { p50: engineP50, max: 0, runs: 5 } } }) as unknown as BenchResult;

  it("reads the first chat request's added work against 150 ms from the cache and 400 ms from the engine", () => {
    const v = verdicts(withTokenizer(27, 399));
    expect(v.find((x) => x.id === "first-chat-cache")).toMatchObject({ value: "27 ms", met: true });
    expect(v.find((x) => x.id === "first-chat-engine")).toMatchObject({ value: "399 ms", met: true });
    const slow = verdicts(withTokenizer(151, 401));
    expect(slow.find((x) => x.id === "first-chat-cache")?.met).toBe(false);
    expect(slow.find((x) => x.id === "first-chat-engine")?.met).toBe(false);
    expect(verdicts(run(cases)).find((x) => x.id === "first-chat-engine")).toMatchObject({ value: "n/a", met: undefined });
  });

  it("holds the default SSE relay to 1.2x and the Connect frame to 1.5x the pass-through", () => {
    const at = (nativeUs: number, connectUs: number) =>
      verdicts(run(cases.map((c) => (c.target !== "gateway" ? c : c.case.endsWith("native") ? kase(c.case, "gateway", nativeUs) : c.case === CONNECT ? kase(c.case, "gateway", connectUs) : c))));
    const met = at(60, 75);
    expect(met.find((x) => x.id === "ratio-sse-native")?.met).toBe(true);
    expect(met.find((x) => x.id === "ratio-connect")?.met).toBe(true);
    const missed = at(61, 76);
    expect(missed.find((x) => x.id === "ratio-sse-native")?.met).toBe(false);
    expect(missed.find((x) => x.id === "ratio-connect")?.met).toBe(false);
  });
});
