// The leg driver's check of a copy read behind the client (leg-driver.ts `check_behind`), the
// one impure step the machine's table (leg-machine.test.ts) cannot show: when the client
// leaves a leg whose consumer watches behind it, the consumer's `endSeen` is asked first, and
// its answer decides whether the engine gets its Abort RPC and the call is closed.
import { describe, expect, it } from "vitest";
import { LegDriver } from "../../../src/pd/leg-driver.js";
import type { EngineTarget } from "../../../src/core/types.js";

function driver(endSeen: () => Promise<boolean>) {
  const client = new AbortController();
  const aborts: string[] = [];
  const closed: number[] = [];
  const pending: Promise<unknown>[] = [];
  const engine: EngineTarget = { name: "decode-0", url: "http://decode.test", transport: "connect" };
  const d = new LegDriver({
    transport: { abort: async (_e: EngineTarget, id: string) => void aborts.push(id) },
    engine,
    leg: "decode",
    requestId: "req-1",
    call: { next: () => new Promise<IteratorResult<unknown>>(() => undefined), close: () => void closed.push(1), headers: () => undefined },
    ctx: {
      model: "m",
      clientSignal: client.signal,
      waitUntil: (p) => void pending.push(p),
      loads: { charge: () => () => undefined } as never,
      outcomes: { report: () => undefined } as never,
    },
    rules: { handedOff: true, drain: false },
    timeoutMs: 60_000,
    deferredAbortMaxMs: 1_000,
  });
  const settle = async () => {
    while (pending.length > 0) await Promise.all(pending.splice(0));
  };
  for (const e of ["dispatched", "first_frame", "detach"] as const) d.dispatch(e);
  const stop = d.stopSignal();
  d.watchBehind(endSeen);
  return { d, client, aborts, closed, stop, settle };
}

describe("LegDriver, a copy watched behind the client", () => {
  it("the copy saw the engine's end: no Abort RPC; the pipe is stopped and the call closed", async () => {
    let asked = 0;
    const t = driver(async () => (asked++, true));
    t.client.abort();
    await t.settle();
    expect(asked).toBe(1);
    expect(t.aborts).toEqual([]);
    expect(t.stop.aborted).toBe(true);
    expect(t.closed).toEqual([1]);
    expect(t.d.phase).toBe("ended");
  });

  it("the copy did not see it (an engine still generating): the Abort RPC, and the call closed", async () => {
    const t = driver(async () => false);
    t.client.abort();
    await t.settle();
    expect(t.aborts).toEqual(["req-1"]);
    expect(t.stop.aborted).toBe(true);
    expect(t.closed).toEqual([1]);
  });

  it("a check that fails counts as not seen: the Abort RPC", async () => {
    const t = driver(() => Promise.reject(new Error("copy broke")));
    t.client.abort();
    await t.settle();
    expect(t.aborts).toEqual(["req-1"]);
    expect(t.stop.aborted).toBe(true);
  });

  it("the pipe is not stopped until the check answered (the copy may still catch up)", async () => {
    let answer!: (seen: boolean) => void;
    const t = driver(() => new Promise<boolean>((r) => (answer = r)));
    t.client.abort();
    await Promise.resolve();
    expect(t.stop.aborted).toBe(false);
    expect(t.aborts).toEqual([]);
    answer(true);
    await t.settle();
    expect(t.stop.aborted).toBe(true);
    expect(t.aborts).toEqual([]);
  });
});
