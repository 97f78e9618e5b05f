// Raw Connect / gRPC-web request and response bytes for the VllmEngine surface tests that must
// send what connect-web never would (compressed or unframed bodies, odd content types).
import { fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { GenerateRequestSchema, GenerateResponseSchema, type GenerateResponse } from "../../src/gen/vllm_engine_pb.js";

export const GENERATE_URL = "http://gateway.test/vllm.grpc.engine.VllmEngine/Generate";

export async function gzipBytes(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Response(bytes).body!.pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

export async function gunzipBytes(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Response(bytes).body!.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
}

export function envelope(flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

export function generateRequest(init: MessageInitShape<typeof GenerateRequestSchema>): Uint8Array {
  return toBinary(GenerateRequestSchema, create(GenerateRequestSchema, init));
}

export interface Frame {
  flags: number;
  data: Uint8Array;
}

export function frames(bytes: Uint8Array): Frame[] {
  const out: Frame[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let off = 0; off < bytes.length; ) {
    const len = view.getUint32(off + 1);
    out.push({ flags: bytes[off]!, data: bytes.subarray(off + 5, off + 5 + len) });
    off += 5 + len;
  }
  return out;
}

/** Messages (inflated when flagged compressed) and the end-of-stream frame's text. */
export async function decodeStream(bytes: Uint8Array, endFlag: 0x02 | 0x80) {
  const messages: GenerateResponse[] = [];
  let end: string | undefined;
  let compressedFrames = 0;
  for (const f of frames(bytes)) {
    const data = f.flags & 0x01 ? await gunzipBytes(f.data) : f.data;
    if (f.flags & 0x01) compressedFrames++;
    if (f.flags & endFlag) end = new TextDecoder().decode(data);
    else messages.push(fromBinary(GenerateResponseSchema, data));
  }
  return { messages, end, compressedFrames };
}
