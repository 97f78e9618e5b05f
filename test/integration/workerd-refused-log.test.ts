// Why `npm test` tolerates one kind of "uncaught exception" line (scripts/test.ts): workerd
// logs a failed outbound connection as an uncaught "Network connection lost" even when the
// Worker awaited and caught the fetch (workerd issue 4253). This test shows the rejection is
// caught in the Worker: run it alone and the log line still appears.
import { expect, it } from "vitest";

it("a refused fetch rejects into the caller's catch (workerd still logs it)", async () => {
  let caught: unknown;
  try {
    await fetch("http://127.0.0.1:9/refused", { method: "POST", body: "x" });
  } catch (err) {
    caught = err;
  }
  expect(String(caught)).toMatch(/Network connection lost/);
});
