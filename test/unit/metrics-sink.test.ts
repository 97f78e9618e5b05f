// The sink: at most 250 points per request context (then drop, count, log once), a throwing
// binding caught and counted, the console fallback, and the dev ring tee.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createEventSink, newMetricsCounters } from "../../src/metrics/sink.js";
import { MAX_POINTS_PER_INVOCATION } from "../../src/metrics/limits.js";
import { PointRing } from "../../src/metrics/dev-ring.js";
import { recentBody, teeDataset } from "../../src/api/admin/dev-metrics.js";
import type { GatewayEvent } from "../../src/metrics/events.js";

const outcome = (i: number): GatewayEvent => ({ type: "engine_outcome", model: "m", engine: `e${i}`, leg: "decode", status: 200 });

class Recorder implements AnalyticsEngineDataset {
  points: AnalyticsEngineDataPoint[] = [];
  writeDataPoint(p?: AnalyticsEngineDataPoint) {
    if (p) this.points.push(p);
  }
}

afterEach(() => vi.restoreAllMocks());

describe("per-invocation budget", () => {
  it("writes 250 points, then drops and counts the rest, logging once", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const ds = new Recorder();
    const counters = newMetricsCounters();
    const sink = createEventSink(ds, { counters });
    for (let i = 0; i < MAX_POINTS_PER_INVOCATION + 30; i++) sink.emit(outcome(i));
    expect(MAX_POINTS_PER_INVOCATION).toBe(250);
    expect(ds.points).toHaveLength(250);
    expect(ds.points.at(-1)!.blobs![2]).toBe("e249");
    expect(counters.droppedOverLimit).toBe(30);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(JSON.parse(warn.mock.calls[0]![0] as string)).toMatchObject({ limit: 250 });
  });

  it("counts per request context: a new sink has a fresh budget", () => {
    const ds = new Recorder();
    const a = createEventSink(ds, { maxPoints: 2 });
    const b = createEventSink(ds, { maxPoints: 2 });
    vi.spyOn(console, "warn").mockImplementation(() => {});
    for (let i = 0; i < 3; i++) a.emit(outcome(i));
    for (let i = 0; i < 3; i++) b.emit(outcome(i));
    expect(ds.points).toHaveLength(4);
  });
});

describe("failures never reach the request", () => {
  it("a throwing binding is caught and counted", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const counters = newMetricsCounters();
    const sink = createEventSink({ writeDataPoint: () => { throw new Error("binding down"); } }, { counters });
    expect(() => { sink.emit(outcome(1)); sink.emit(outcome(2)); }).not.toThrow();
    expect(counters.writeFailures).toBe(2);
    expect(warn).toHaveBeenCalledTimes(1); // the first failure only
    // Another sink of the same isolate adds to the same counters.
    createEventSink({ writeDataPoint: () => { throw new Error("binding down"); } }, { counters }).emit(outcome(3));
    expect(counters.writeFailures).toBe(3);
  });

  it("no binding: one JSON line per event on the console", () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    createEventSink(undefined).emit(outcome(7));
    expect(log).toHaveBeenCalledTimes(1);
    expect(JSON.parse(log.mock.calls[0]![0] as string)).toEqual({ metric: outcome(7) });
  });

  it("emit returns synchronously (nothing awaited)", () => {
    const result = (createEventSink(new Recorder()).emit as (e: GatewayEvent) => unknown)(outcome(1));
    expect(result).toBeUndefined();
  });
});

describe("dev ring", () => {
  it("keeps the newest N points, oldest first, with increasing seq", () => {
    const ring = new PointRing(3);
    for (let i = 0; i < 5; i++) ring.push({ blobs: ["v1", "engine_outcome", `e${i}`] });
    const entries = ring.entries();
    expect(entries.map((e) => e.point.blobs![2])).toEqual(["e2", "e3", "e4"]);
    expect(entries.map((e) => e.seq)).toEqual([3, 4, 5]);
  });

  it("the tee copies exactly the points the sink wrote, then forwards them", () => {
    const ring = new PointRing(10);
    const ds = new Recorder();
    const sink = createEventSink(teeDataset(ds, ring), { maxPoints: 3 });
    vi.spyOn(console, "warn").mockImplementation(() => {});
    for (let i = 0; i < 5; i++) sink.emit(outcome(i));
    expect(ds.points).toHaveLength(3);
    expect(ring.entries().map((e) => e.point)).toEqual(ds.points);
  });

  it("the tee with no binding still logs each event", () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const ring = new PointRing(10);
    createEventSink(teeDataset(undefined, ring)).emit(outcome(3));
    expect(ring.entries()).toHaveLength(1);
    expect(JSON.parse(log.mock.calls[0]![0] as string)).toEqual({ metric: outcome(3) });
  });

  it("recentBody decodes points and filters by type and limit", () => {
    const ring = new PointRing(10);
    const sink = createEventSink(teeDataset(new Recorder(), ring));
    sink.emit(outcome(1));
    sink.emit({ type: "kv_transfer_failure", model: "m", prefillEngine: "p" });
    sink.emit(outcome(2));
    const all = recentBody(ring, newMetricsCounters());
    expect(all.points.map((p) => p.event)).toEqual([outcome(1), { type: "kv_transfer_failure", model: "m", prefillEngine: "p" }, outcome(2)]);
    expect(all).toMatchObject({ schemaVersion: "v1", capacity: 10 });
    expect(typeof all.writeFailures).toBe("number");
    expect(recentBody(ring, newMetricsCounters(), "engine_outcome").points).toHaveLength(2);
    expect(recentBody(ring, newMetricsCounters(), undefined, "1").points.map((p) => p.event)).toEqual([outcome(2)]);
  });
});
