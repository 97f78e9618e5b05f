import { expect, it } from "vitest";
import { ClientRequests, engineRequestIdFor, OPEN_OWNER } from "../../../src/routing/client-requests.js";

it("an Abort reaches an entry only from the owner that started it, and only while tracked", async () => {
  const r = new ClientRequests();
  const tracked = r.track("req-1", "aaa");
  expect(r.requestAbort("req-1", "bbb")).toBe(false);
  expect(r.requestAbort("req-2", "aaa")).toBe(false);
  await Promise.resolve();
  expect(tracked.abortRequested.aborted).toBe(false);
  expect(r.requestAbort("req-1", "aaa")).toBe(true);
  // Through a promise the served request created (its reactions run in that request).
  expect(tracked.abortRequested.aborted).toBe(false);
  await Promise.resolve();
  expect(tracked.abortRequested.aborted).toBe(true);
  tracked.untrack();
  expect(r.requestAbort("req-1", "aaa")).toBe(false);
  expect(r.size).toBe(0);
});

it("a second request under the same id replaces the first; the first's untrack leaves it", () => {
  const r = new ClientRequests();
  const first = r.track("dup", "aaa");
  const second = r.track("dup", "aaa");
  first.untrack();
  expect(r.requestAbort("dup", "aaa")).toBe(true);
  second.untrack();
  expect(r.size).toBe(0);
});

it("engine-side ids carry the credential's tag, except on an open data plane", () => {
  expect(engineRequestIdFor(OPEN_OWNER, "x")).toBe("x");
  expect(engineRequestIdFor("aaa", "x")).toBe("x.aaa");
});

it("Abort slots: at most `limit` per owner at once, given back once each, owners apart", () => {
  const r = new ClientRequests();
  const a1 = r.takeAbortSlot("a", 2)!;
  const a2 = r.takeAbortSlot("a", 2)!;
  expect(r.takeAbortSlot("a", 2)).toBeUndefined();
  expect(r.takeAbortSlot("b", 2)).toBeDefined();
  a1();
  a1();
  const a3 = r.takeAbortSlot("a", 2);
  expect(a3).toBeDefined();
  expect(r.takeAbortSlot("a", 2)).toBeUndefined();
  a2();
  a3!();
});

it("Abort slots are leases: one never given back (its request was cancelled) lapses", () => {
  const r = new ClientRequests();
  r.takeAbortSlot("a", 2, 1_000, 10_000);
  r.takeAbortSlot("a", 2, 2_000, 10_000);
  expect(r.takeAbortSlot("a", 2, 10_999, 10_000)).toBeUndefined();
  const later = r.takeAbortSlot("a", 2, 11_001, 10_000); // the first lapsed
  expect(later).toBeDefined();
  expect(r.takeAbortSlot("a", 2, 11_002, 10_000)).toBeUndefined();
  later!();
  expect(r.takeAbortSlot("a", 2, 11_003, 10_000)).toBeDefined();
});

it("Abort id budget: a one-second burst per owner, refilled with time; a refused call spends nothing", () => {
  const r = new ClientRequests();
  expect(r.spendAbortIds("a", 64, 100, 0)).toBe(true);
  expect(r.spendAbortIds("a", 64, 100, 0)).toBe(false); // 36 left
  expect(r.spendAbortIds("a", 36, 100, 0)).toBe(true);
  expect(r.spendAbortIds("b", 100, 100, 0)).toBe(true); // owners apart
  expect(r.spendAbortIds("a", 50, 100, 400)).toBe(false); // 40 refilled
  expect(r.spendAbortIds("a", 50, 100, 500)).toBe(true); // 50 refilled
  expect(r.spendAbortIds("a", 100, 100, 10_000)).toBe(true); // capped at one second's worth
  expect(r.spendAbortIds("a", 1, 100, 10_000)).toBe(false);
});
