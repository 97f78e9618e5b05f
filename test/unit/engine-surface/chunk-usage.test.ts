// The raw relay's byte reader for a chunk's usage agrees with decoding the message, for every
// shape a servicer sends (multi-byte token ids, logprobs in between, n>1 indexes), and refuses
// bytes that are not a well-formed chunk.
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { chunkUsage } from "../../../src/api/engine/chunk-usage.js";
import { usageFrameOf } from "../../../src/core/usage.js";
import { GenerateResponseSchema, GenerateStreamChunkSchema } from "../../../src/gen/vllm_engine_pb.js";

type ChunkInit = MessageInitShape<typeof GenerateStreamChunkSchema>;
const bytes = (value: ChunkInit) => toBinary(GenerateResponseSchema, create(GenerateResponseSchema, { response: { case: "chunk", value } }));

describe("chunkUsage", () => {
  it.each<[string, ChunkInit]>([
    ["one small token id", { tokenIds: [5], completionTokens: 1, promptTokens: 7 }],
    ["ids of 1 to 5 varint bytes", { tokenIds: [1, 127, 128, 151645, 2 ** 32 - 1], completionTokens: 5, promptTokens: 300, cachedTokens: 256 }],
    ["no tokens (an empty delta)", { tokenIds: [], promptTokens: 3 }],
    ["n>1: the index", { tokenIds: [9, 10], index: 3, promptTokens: 4 }],
    ["logprobs before the index are skipped", {
      tokenIds: [42], index: 1, promptTokens: 2,
      outputLogprobs: { tokenLogprobs: [-0.5], tokenIds: [42], topLogprobs: [{ values: [-0.5, -1], tokenIds: [42, 43] }] },
      inputLogprobs: { tokenLogprobs: [{ value: -2 }], tokenIds: [1] },
    }],
  ])("%s: as decoding the message says", (_name, value) => {
    const b = bytes(value);
    expect(chunkUsage(b)).toEqual(usageFrameOf(create(GenerateResponseSchema, { response: { case: "chunk", value } })));
  });

  it("counts token ids sent unpacked too (a decoder must accept both)", () => {
    const inner = new BinaryWriter().uint32(8).uint32(151645).uint32(8).uint32(3).uint32(56).uint32(2).finish(); // field 1 varint x2, index 2
    const outer = new BinaryWriter().uint32(10).bytes(inner).finish();
    expect(chunkUsage(outer)).toMatchObject({ tokens: 2, index: 2 });
  });

  it.each([
    ["a complete message", toBinary(GenerateResponseSchema, create(GenerateResponseSchema, { response: { case: "complete", value: { outputIds: [1] } } }))],
    ["a chunk cut short", bytes({ tokenIds: [151645, 151643], promptTokens: 9 }).subarray(0, 5)],
    ["garbage", Uint8Array.of(0xff, 0xff, 0xff)],
    ["nothing", new Uint8Array(0)],
  ])("%s: undefined", (_name, b) => {
    expect(chunkUsage(b)).toBeUndefined();
  });
});
