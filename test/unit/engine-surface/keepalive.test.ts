// The keepalive frame is an empty GenerateResponse in each streaming wire format, decoded here
// by protobuf-es itself (the codec connect-es clients use), uncompressed and not end-of-stream.
import { describe, expect, it } from "vitest";
import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { GenerateResponseSchema, VllmEngine } from "../../../src/gen/vllm_engine_pb.js";
import { keepaliveFrame } from "../../../src/api/engine/keepalive.js";
import { wireFormatOf } from "../../../src/api/engine/content-types.js";

const generate = VllmEngine.method.generate;

describe("keepaliveFrame", () => {
  it.each([
    ["application/connect+proto", "binary"],
    ["application/connect+json", "json"],
    ["application/grpc-web+proto", "binary"],
    ["application/grpc-web", "binary"],
    ["application/grpc-web+json", "json"],
  ] as const)("%s: an envelope with flag 0 holding an empty GenerateResponse (%s)", (contentType, codec) => {
    const format = wireFormatOf(contentType, generate)!;
    const frame = keepaliveFrame(format);
    expect(frame[0]).toBe(0);
    const length = new DataView(frame.buffer, frame.byteOffset).getUint32(1);
    expect(frame.length).toBe(5 + length);
    const payload = frame.subarray(5);
    const message = codec === "binary" ? fromBinary(GenerateResponseSchema, payload) : fromJsonString(GenerateResponseSchema, new TextDecoder().decode(payload));
    expect(message.response.case).toBeUndefined();
  });
});
