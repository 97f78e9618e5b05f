// Which streamed Generate calls may be relayed as the engine's raw frames: binary enveloped
// formats with nothing connect-es would change on the way (compression, a deadline).
import { describe, expect, it } from "vitest";
import { VllmEngine } from "../../../src/gen/vllm_engine_pb.js";
import { wireFormatOf } from "../../../src/api/engine/content-types.js";
import { rawRelayProtocol } from "../../../src/api/engine/raw-eligible.js";

const generate = VllmEngine.method.generate;

describe("rawRelayProtocol", () => {
  it.each([
    ["application/connect+proto", {}, "connect"],
    ["application/grpc-web+proto", {}, "grpc-web"],
    ["application/grpc-web", {}, "grpc-web"],
    ["application/connect+json", {}, undefined],
    ["application/grpc-web+json", {}, undefined],
    ["application/connect+proto", { "connect-accept-encoding": "gzip" }, undefined],
    ["application/connect+proto", { "connect-accept-encoding": "br, gzip" }, undefined],
    ["application/connect+proto", { "connect-accept-encoding": "identity" }, "connect"],
    ["application/connect+proto", { "connect-accept-encoding": "br" }, "connect"],
    ["application/connect+proto", { "connect-content-encoding": "gzip" }, undefined],
    ["application/connect+proto", { "connect-content-encoding": "identity" }, "connect"],
    ["application/connect+proto", { "connect-timeout-ms": "5000" }, undefined],
    // An empty encoding is one connect-es refuses (Unimplemented): it answers those.
    ["application/connect+proto", { "connect-content-encoding": "" }, undefined],
    ["application/grpc-web+proto", { "grpc-encoding": "" }, undefined],
    ["application/grpc-web+proto", { "grpc-accept-encoding": "gzip" }, undefined],
    ["application/grpc-web+proto", { "grpc-encoding": "gzip" }, undefined],
    ["application/grpc-web+proto", { "grpc-timeout": "5S" }, undefined],
    // Another protocol's headers change nothing.
    ["application/grpc-web+proto", { "connect-accept-encoding": "gzip" }, "grpc-web"],
  ] as const)("%s with %j -> %s", (contentType, headers, expected) => {
    const format = wireFormatOf(contentType, generate)!;
    expect(rawRelayProtocol(format, new Headers(headers))).toBe(expected);
  });
});
