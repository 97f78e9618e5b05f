import { describe, expect, it } from "vitest";
import { actsAlike, canExecute, newBreaker, recordOutcome, type Breaker, type BreakerSettings } from "../../src/routing/breaker.js";
import { applyProbe, isRoutable, newHealth, type EngineHealth } from "../../src/routing/health-state.js";
import { backoffMs, exclusionAfter, MIN_ATTEMPT_MS, nextRetryDelay, type RetrySettings } from "../../src/routing/retry.js";
import { legTimeoutMs } from "../../src/pd/deadline.js";
import { choose, prefixKeyOf, RoundRobinCounters } from "../../src/routing/policies.js";
import { rendezvous } from "../../src/routing/hashing.js";
import { EngineLoads } from "../../src/core/in-flight.js";

const B: BreakerSettings = { failure_threshold: 3, success_threshold: 2, timeout_secs: 10, disabled: false };

describe("circuit breaker", () => {
  it("closed -> open after consecutive failures, half-open after the timeout, closed after successes", () => {
    const b = newBreaker(0);
    expect(recordOutcome(b, B, 503, 1)).toBeUndefined();
    expect(recordOutcome(b, B, 500, 2)).toBeUndefined();
    expect(recordOutcome(b, B, 429, 3)).toEqual({ from: "closed", to: "open" });
    expect(canExecute(b, B, 9_000)).toBe(false);
    expect(canExecute(b, B, 10_003)).toBe(true);
    expect(b.state).toBe("half_open");
    expect(recordOutcome(b, B, 200, 10_004)).toBeUndefined();
    expect(recordOutcome(b, B, 200, 10_005)).toEqual({ from: "half_open", to: "closed" });
  });
  it("half-open -> open on any failure", () => {
    const b = newBreaker(0);
    for (let i = 0; i < 3; i++) recordOutcome(b, B, 503, 0);
    canExecute(b, B, 20_000);
    expect(recordOutcome(b, B, 502, 20_001)).toEqual({ from: "half_open", to: "open" });
  });
  it("4xx counts as success and resets the failure count", () => {
    const b = newBreaker(0);
    recordOutcome(b, B, 503, 0);
    recordOutcome(b, B, 503, 0);
    recordOutcome(b, B, 400, 0);
    recordOutcome(b, B, 503, 0);
    recordOutcome(b, B, 404, 0);
    expect(b.state).toBe("closed");
  });
  const at = (b: Partial<Breaker>): Breaker => ({ state: "closed", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: 5, ...b });
  it.each([
    ["closed, a longer success run", at({}), at({ consecutiveSuccesses: 9 }), true],
    ["closed, a failure run", at({}), at({ consecutiveFailures: 1 }), false],
    ["closed, the failure run ended", at({ consecutiveFailures: 2 }), at({ consecutiveSuccesses: 1 }), false],
    ["half-open, a longer success run", at({ state: "half_open" }), at({ state: "half_open", consecutiveSuccesses: 1 }), false],
    ["another state", at({}), at({ state: "open" }), false],
    ["the same state since another time", at({ state: "open" }), at({ state: "open", changedAt: 6 }), false],
  ])("actsAlike: %s -> %s", (_name, a, b, alike) => {
    expect(actsAlike(a, b)).toBe(alike);
  });
  it("a success on a clean closed breaker leaves it acting alike; a failure does not", () => {
    const b = newBreaker(0);
    const was = { ...b };
    recordOutcome(b, B, 200, 1);
    expect(actsAlike(was, b)).toBe(true);
    recordOutcome(b, B, 503, 2);
    expect(actsAlike(was, b)).toBe(false);
  });
  it("disabled never opens", () => {
    const b = newBreaker(0);
    for (let i = 0; i < 10; i++) recordOutcome(b, { ...B, disabled: true }, 503, 0);
    expect(canExecute(b, { ...B, disabled: true }, 0)).toBe(true);
  });
});

describe("health state machine", () => {
  const S = { success_threshold: 2, failure_threshold: 3 };
  const run = (h: EngineHealth, probes: boolean[]) => probes.reduce((acc, ok, i) => applyProbe(acc, S, ok, i), h);
  it.each([
    [[true, true], "ready"],
    [[true], "pending"],
    [[false, false, false], "not_ready"],
    [[true, true, false, false, false], "not_ready"],
    [[true, true, false, false, false, true, true], "ready"],
    [[true, true, ...Array(9).fill(false)], "failed"],
    [[true, true, ...Array(9).fill(false), true, true], "ready"],
  ] as const)("%j -> %s", (probes, status) => {
    expect(run(newHealth(), [...probes]).status).toBe(status);
  });
  it("routable: unknown, pending and ready", () => {
    expect(isRoutable(undefined)).toBe(true);
    expect(isRoutable(newHealth())).toBe(true);
    expect(isRoutable({ ...newHealth(), status: "not_ready" })).toBe(false);
  });
});

describe("retry", () => {
  const R: RetrySettings = { max_retries: 5, initial_backoff_ms: 50, max_backoff_ms: 30_000, backoff_multiplier: 1.5, jitter_factor: 0.2, max_total_backoff_ms: 5_000, disabled: false, deadline_ms: 120_000 };
  it("backoff grows by the multiplier, capped, with bounded jitter", () => {
    expect([0, 1, 2].map((a) => backoffMs(a, R, () => 0.5))).toEqual([50, 75, 113]);
    expect(backoffMs(40, R, () => 0.5)).toBe(30_000);
    expect(backoffMs(0, R, () => 0)).toBe(40);
    expect(backoffMs(0, R, () => 1)).toBe(60);
  });
  it.each([
    [503, false, 1, 0, true],
    [400, false, 1, 0, false],
    [503, true, 1, 0, false],
    [503, false, 5, 0, false],
    [429, false, 2, 4_990, false],
  ])("status %s, bytesSent %s, attempts %s, spent %s -> retry %s", (status, sent, attempts, spent, retry) => {
    expect(nextRetryDelay(status, sent, { attempts, backoffSpentMs: spent }, R, () => 0.5) !== undefined).toBe(retry);
  });
  // The deadline: a retry needs its backoff (50 ms here) plus MIN_ATTEMPT_MS left of it.
  it.each([
    [0, 120_000, true],
    [60_000, 120_000, true],
    [118_950, 120_000, true],
    [118_951, 120_000, false],
    [120_000, 120_000, false],
    [300_000, 120_000, false],
    [0, 1_000, false],
    [0, 1_050, true],
  ])("elapsed %s ms of a %s ms deadline -> retry %s", (elapsedMs, deadline_ms, retry) => {
    expect(MIN_ATTEMPT_MS).toBe(1_000);
    expect(nextRetryDelay(504, false, { attempts: 1, backoffSpentMs: 0, elapsedMs }, { ...R, deadline_ms, jitter_factor: 0 }) !== undefined).toBe(retry);
  });
  it.each([
    ["prefill_timeout", "never"],
    ["decode_timeout", "never"],
    ["engine_timeout", "never"],
    ["prefill_worker_failed_to_start", "avoid"],
    ["decode_request_failed", "avoid"],
    ["prefill_upstream_error", "avoid"],
    ["decode_unavailable", "avoid"],
  ] as const)("an engine that failed with %s is %s for the request's later attempts", (code, what) => {
    expect(exclusionAfter(code)).toBe(what);
  });
});

describe("a leg's timeout under the request's deadline", () => {
  it.each([
    [60_000, undefined, 0, 60_000],
    [60_000, 120_000, 0, 60_000],
    [60_000, 120_000, 70_000, 50_000],
    [60_000, 120_000, 119_999, 1],
    [60_000, 120_000, 120_000, 1],
    [60_000, 120_000, 500_000, 1],
    [1_500, 3_000, 1_600, 1_400],
  ])("per-leg %s ms, deadline at %s, now %s -> %s ms", (perLeg, deadlineAt, now, expected) => {
    expect(legTimeoutMs(perLeg, deadlineAt, now)).toBe(expected);
  });
});

describe("policies", () => {
  const candidates = ["a", "b", "c"];
  it("round_robin cycles per state key, in the counters it is given", () => {
    const counters = new RoundRobinCounters();
    const picks = Array.from({ length: 6 }, () => choose("round_robin", { candidates, stateKey: "t-rr", load: () => 0, counters }));
    expect(picks).toEqual([0, 1, 2, 0, 1, 2]);
    expect(choose("round_robin", { candidates, stateKey: "other", load: () => 0, counters })).toBe(0);
  });
  it("power_of_two prefers the less loaded of two distinct picks", () => {
    const load = (e: string) => ({ a: 5, b: 0, c: 9 })[e]!;
    const seq = (xs: number[]) => { let i = 0; return () => xs[i++]!; };
    // picks a (0.1 -> 0) and c (0.9 -> 1 -> shifted to 2): a is less loaded
    expect(choose("power_of_two", { candidates, stateKey: "p", load, random: seq([0.1, 0.9]) })).toBe(0);
    // picks a and b: b is less loaded
    expect(choose("power_of_two", { candidates, stateKey: "p", load, random: seq([0.1, 0.1]) })).toBe(1);
  });
  it("consistent_hash and prefix_hash are stable and consistent", () => {
    const k = choose("consistent_hash", { candidates, stateKey: "c", load: () => 0, routingKey: "s1" });
    expect(choose("consistent_hash", { candidates, stateKey: "c", load: () => 0, routingKey: "s1" })).toBe(k);
    // Removing an engine that does not own the key keeps the key where it was.
    const owner = candidates[rendezvous("s1", candidates)]!;
    const others = candidates.filter((c) => c !== owner);
    const reduced = [owner, others[0]!];
    expect(reduced[rendezvous("s1", reduced)]).toBe(owner);
  });
  it("prefix_hash leaves an overloaded owner", () => {
    const owner = rendezvous("prefix", candidates);
    const load = (e: string) => (e === candidates[owner] ? 10 : 0);
    expect(choose("prefix_hash", { candidates, stateKey: "x", load, prefixKey: "prefix" })).not.toBe(owner);
  });
  it("prefix key: first 256 tokens or 1024 chars", () => {
    expect(prefixKeyOf({ tokens: Array.from({ length: 300 }, (_, i) => i) })!.split(",")).toHaveLength(256);
    expect(prefixKeyOf({ text: "x".repeat(2000) })).toHaveLength(1024);
    expect(prefixKeyOf({})).toBeUndefined();
  });
  it("load guards release once", () => {
    const loads = new EngineLoads();
    const release = loads.charge("engine-x");
    loads.charge("engine-x")();
    expect(loads.load("engine-x")).toBe(1);
    release();
    release();
    expect(loads.load("engine-x")).toBe(0);
    expect(loads.total()).toBe(0);
  });
});
