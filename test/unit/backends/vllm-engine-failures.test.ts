// How a failed VllmEngine call is classified (issue 32): the runtime's own connection failure
// is UNAVAILABLE (503 naming the engine, as gRPC clients report it), not an engine's 500; what
// the engine said keeps its code; bytes that cannot be decoded are malformed.
import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { rpcFailure } from "../../../src/backends/vllm-engine-failures.js";
import { legError } from "../../../src/pd/leg-errors.js";

const fromEngine = (code: Code, message: string) => new ConnectError(message, code, new Headers({ "content-type": "application/connect+proto" }));

describe("rpcFailure", () => {
  it.each([
    ["the connection lost (workerd)", ConnectError.from(new Error("Network connection lost.")), "rpc", 503, "decode_worker_failed_to_start", 503],
    ["fetch failed (Node)", ConnectError.from(new TypeError("fetch failed")), "rpc", 503, "decode_worker_failed_to_start", 503],
    ["the engine's INTERNAL", fromEngine(Code.Internal, "boom"), "rpc", 500, "decode_worker_failed_to_start", 500],
    ["the engine's UNAVAILABLE", fromEngine(Code.Unavailable, "down"), "rpc", 503, "decode_worker_failed_to_start", 503],
    ["the engine's UNKNOWN", fromEngine(Code.Unknown, "what"), "rpc", 500, "decode_worker_failed_to_start", 500],
    ["a frame that cannot be decoded", new ConnectError("premature end of stream", Code.Internal), "malformed", 502, "decode_worker_failed_to_start", 502],
    ["UNKNOWN without a runtime cause", new ConnectError("odd", Code.Unknown), "rpc", 500, "decode_worker_failed_to_start", 500],
  ])("%s -> %s %s, the client's %s %s", (_name, err, kind, status, code, clientStatus) => {
    const f = rpcFailure(err);
    expect([f.kind, f.status]).toEqual([kind, status]);
    const e = legError("decode", "start", "d0", f);
    expect([e.code, e.status]).toEqual([code, clientStatus]);
    if (kind === "rpc" && status === 503) expect(f.connectCode).toBe(Code.Unavailable);
    expect(e.message).toContain("(decode engine 'd0')");
  });
});
