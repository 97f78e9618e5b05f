import { describe, expect, it } from "vitest";
import { AbortBatches } from "../../../src/routing/abort-batches.js";
import type { EngineTarget } from "../../../src/core/types.js";

const engine = (name: string): EngineTarget => ({ name, url: `http://${name}`, transport: "connect" });
const tick = () => new Promise((r) => setTimeout(r, 0));

/** A send whose RPCs answer only when the test says so. */
function controlledSend() {
  const rpcs: { engine: string; ids: string[]; answer: () => void; fail: () => void }[] = [];
  const send = (e: EngineTarget, ids: string[]) =>
    new Promise<void>((resolve, reject) => rpcs.push({ engine: e.name, ids, answer: resolve, fail: () => reject(new Error("down")) }));
  return { rpcs, send };
}

describe("AbortBatches", () => {
  it("a lone call is sent at once, alone", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send);
    const done = b.abort(engine("e"), ["a", "b"]);
    await tick();
    expect(rpcs.map((r) => r.ids)).toEqual([["a", "b"]]);
    rpcs[0]!.answer();
    expect(await done).toBe(true);
  });

  it("calls that arrive while an RPC is in flight go together in the next one; all answer when theirs has", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send);
    const first = b.abort(engine("e"), ["1"]);
    const later = [b.abort(engine("e"), ["2"]), b.abort(engine("e"), ["3", "4"]), b.abort(engine("e"), ["5"])];
    await tick();
    expect(rpcs).toHaveLength(1);
    expect(b.waitingFor("e")).toBe(4);
    rpcs[0]!.answer();
    expect(await first).toBe(true);
    await tick();
    expect(rpcs.map((r) => r.ids)).toEqual([["1"], ["2", "3", "4", "5"]]);
    let settled = false;
    void Promise.all(later).then(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // not before their RPC answered
    rpcs[1]!.answer();
    expect(await Promise.all(later)).toEqual([true, true, true]);
    expect(b.waitingFor("e")).toBe(0);
  });

  it("engines are independent", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send);
    void b.abort(engine("p"), ["x"]);
    void b.abort(engine("d"), ["x"]);
    await tick();
    expect(rpcs.map((r) => r.engine)).toEqual(["p", "d"]);
  });

  it.each([
    // [maxIdsPerRpc, waiting call sizes, the RPCs after the first]
    [4, [2, 2, 2], [[2, 2], [2]]],
    [4, [3, 3], [[3], [3]]],
    [4, [5, 1], [[5], [1]]], // a call larger than the cap still goes (whole, alone)
    [1024, [64, 64, 64], [[64, 64, 64]]],
  ])("maxIdsPerRpc %i: waiting calls %j are sent as %j, whole calls in arrival order", async (maxIdsPerRpc, sizes, expected) => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send, { maxIdsPerRpc });
    void b.abort(engine("e"), ["first"]);
    const calls = sizes.map((n, i) => b.abort(engine("e"), Array.from({ length: n }, (_, k) => `c${i}-${k}`)));
    for (let i = 0; i <= expected.length; i++) {
      await tick();
      rpcs[i]?.answer();
    }
    await Promise.all(calls);
    const batches = rpcs.slice(1).map((r) => r.ids);
    const sizesOf = (ids: string[]) => {
      const byCall = new Map<string, number>();
      for (const id of ids) byCall.set(id.split("-")[0]!, (byCall.get(id.split("-")[0]!) ?? 0) + 1);
      return [...byCall.values()];
    };
    expect(batches.map(sizesOf)).toEqual(expected);
  });

  it("refuses a call once the engine's waiting ids would pass the bound", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send, { maxWaitingIds: 100 });
    void b.abort(engine("e"), ["first"]);
    const ok = b.abort(engine("e"), Array.from({ length: 64 }, (_, i) => `a${i}`));
    expect(await b.abort(engine("e"), Array.from({ length: 64 }, (_, i) => `b${i}`))).toBe(false);
    rpcs[0]!.answer();
    await tick();
    rpcs[1]!.answer();
    expect(await ok).toBe(true);
  });

  it("a failed RPC still answers its calls, and the next batch goes out", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send);
    const first = b.abort(engine("e"), ["1"]);
    const second = b.abort(engine("e"), ["2"]);
    await tick();
    rpcs[0]!.fail();
    expect(await first).toBe(true);
    await tick();
    expect(rpcs[1]!.ids).toEqual(["2"]);
    rpcs[1]!.answer();
    expect(await second).toBe(true);
  });

  it("a sender that never comes back (its request was cancelled) is taken over after stalledAfterMs", async () => {
    const { rpcs, send } = controlledSend();
    let now = 0;
    const b = new AbortBatches(send, { stalledAfterMs: 6_000 }, () => now);
    void b.abort(engine("e"), ["lost"]);
    const waiting = b.abort(engine("e"), ["w"]);
    now = 5_000;
    const notYet = b.abort(engine("e"), ["n"]);
    await tick();
    expect(rpcs).toHaveLength(1);
    now = 6_001;
    const taker = b.abort(engine("e"), ["t"]);
    await tick();
    expect(rpcs[1]!.ids).toEqual(["t", "w", "n"]);
    rpcs[1]!.answer();
    expect(await Promise.all([taker, waiting, notYet])).toEqual([true, true, true]);
  });
});

describe("AbortBatches: a waiting call holds its own timer", () => {
  it("a queued call whose sender never answers takes over once its timer sees the sender stalled", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send, { stalledAfterMs: 30 });
    void b.abort(engine("e"), ["lost"]); // its RPC never answers
    const waiting = b.abort(engine("e"), ["w"]);
    await new Promise((r) => setTimeout(r, 20));
    expect(rpcs).toHaveLength(1); // the sender is not stalled yet: keep waiting
    await new Promise((r) => setTimeout(r, 60));
    expect(rpcs.map((r) => r.ids)).toEqual([["lost"], ["w"]]);
    expect(b.waitingFor("e")).toBe(0);
    rpcs[1]!.answer();
    expect(await waiting).toBe(true);
  });
});

describe("AbortBatches: hand-offs", () => {
  it("a slow engine: calls queued behind slow RPCs keep waiting (no RPC of their own) while the sender is alive", async () => {
    const { rpcs, send } = controlledSend();
    const b = new AbortBatches(send, { stalledAfterMs: 50 });
    void b.abort(engine("e"), ["a"]);
    const later = [b.abort(engine("e"), ["b"]), b.abort(engine("e"), ["c"])];
    await new Promise((r) => setTimeout(r, 40));
    rpcs[0]!.answer(); // 40 ms: within the stall bound
    await new Promise((r) => setTimeout(r, 40)); // the next batch's RPC runs 40 ms more
    expect(rpcs.map((r) => r.ids)).toEqual([["a"], ["b", "c"]]);
    rpcs[1]!.answer();
    expect(await Promise.all(later)).toEqual([true, true]);
    expect(rpcs).toHaveLength(2);
  });
});
