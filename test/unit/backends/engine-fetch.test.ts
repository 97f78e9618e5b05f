// engineFetch: a connection lost before any answer is re-sent a bounded number of times, only
// when the request can be re-sent; everything else surfaces at once.
import { afterEach, describe, expect, it, vi } from "vitest";
import { engineFetch, STALE_CONNECTION_RETRIES } from "../../../src/backends/fetch.js";

const LOST = () => new Error("Network connection lost.");
let calls: RequestInit[] = [];

function stubFetch(failures: number, error: () => Error = LOST) {
  calls = [];
  vi.stubGlobal("fetch", async (_input: unknown, init: RequestInit) => {
    calls.push(init);
    if (calls.length <= failures) throw error();
    return new Response("ok");
  });
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("engineFetch", () => {
  it.each([
    { case: "no failure", failures: 0, ok: true, attempts: 1 },
    { case: "one lost connection", failures: 1, ok: true, attempts: 2 },
    { case: "as many as it retries", failures: STALE_CONNECTION_RETRIES, ok: true, attempts: STALE_CONNECTION_RETRIES + 1 },
    { case: "one more than it retries", failures: STALE_CONNECTION_RETRIES + 1, ok: false, attempts: STALE_CONNECTION_RETRIES + 1 },
  ])("$case", async ({ failures, ok, attempts }) => {
    stubFetch(failures);
    const p = engineFetch("http://engine/v1/completions", { method: "POST", body: "{}" });
    if (ok) expect(await (await p).text()).toBe("ok");
    else await expect(p).rejects.toThrow("Network connection lost");
    expect(calls).toHaveLength(attempts);
    expect(calls.every((c) => c.redirect === "manual" && c.body === "{}")).toBe(true);
  });

  it.each([
    ["another transport error", { body: "{}" }, () => new TypeError("connect ECONNREFUSED")],
    ["a stream body (consumed by the first attempt)", { body: new ReadableStream() }, LOST],
    ["a fired signal", { body: "{}", signal: AbortSignal.abort() }, LOST],
  ] as const)("is not re-sent after %s", async (_name, init, error) => {
    stubFetch(1, error);
    await expect(engineFetch("http://engine/x", { method: "POST", ...init })).rejects.toThrow();
    expect(calls).toHaveLength(1);
  });

  it("a Request input is not re-sent (its body is used up)", async () => {
    stubFetch(1);
    await expect(engineFetch(new Request("http://engine/x", { method: "POST", body: "{}" }))).rejects.toThrow();
    expect(calls).toHaveLength(1);
  });
});
