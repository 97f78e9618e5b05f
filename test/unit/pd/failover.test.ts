import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { LegFailure } from "../../../src/core/leg-transport.js";
import { decodeFailoverAllowed } from "../../../src/pd/failover.js";

it.each([
  ["connection refused / lost", new LegFailure("transport", 502, "Network connection lost"), true],
  ["rpc unavailable", new LegFailure("rpc", 503, "down", Code.Unavailable), true],
  ["rpc internal", new LegFailure("rpc", 500, "boom", Code.Internal), true],
  ["rpc resource_exhausted (capacity)", new LegFailure("rpc", 429, "full", Code.ResourceExhausted), true],
  ["rpc deadline: may be pulling", new LegFailure("rpc", 504, "slow", Code.DeadlineExceeded), false],
  ["rpc invalid_argument (client's)", new LegFailure("rpc", 400, "bad", Code.InvalidArgument), false],
  ["rpc not_found", new LegFailure("rpc", 404, "no model", Code.NotFound), false],
  ["HTTP 503", new LegFailure("status", 503, "down"), true],
  ["HTTP 502 from a proxy", new LegFailure("status", 502, "bad gateway"), true],
  ["HTTP 429", new LegFailure("status", 429, "full"), true],
  ["HTTP 504", new LegFailure("status", 504, "slow"), false],
  ["HTTP 400", new LegFailure("status", 400, "context exceeded"), false],
  ["truncated / garbled answer", new LegFailure("malformed", 502, "incomplete envelope", Code.Unavailable), true],
  ["body broke before the first chunk", new LegFailure("read", 502, "lost"), true],
])("%s -> failover %s", (_name, failure, expected) => {
  expect(decodeFailoverAllowed(failure)).toBe(expected);
});
