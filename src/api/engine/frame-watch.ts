// Watches a Generate leg's frames for StreamTiming as they pass (raw-relay.ts, native-tail.ts):
// chunk messages are decoded only until the first token (TTFT), after it only their token
// counts are read off the bytes (chunk-usage.ts); `complete` messages (small) are decoded. It
// keeps the end-of-stream payload, and flags a compressed or oversized frame, past which
// nothing counts.
import { fromBinary } from "@bufbuild/protobuf";
import { GenerateResponseSchema } from "../../gen/vllm_engine_pb.js";
import { COMPRESSED_FLAG, lengthDelimitedTag, MAX_FRAME_BYTES, type EnvelopeSink } from "../../core/envelope.js";
import { chunkUsage } from "./chunk-usage.js";
import type { StreamTiming } from "./stream-timing.js";

/** GenerateResponse's oneof: chunk = 1, complete = 2 (proto/vllm_engine.proto). */
const CHUNK_TAG = lengthDelimitedTag(1);
const COMPLETE_TAG = lengthDelimitedTag(2);

/** Watches frames for StreamTiming and keeps the end-of-stream payload. */
export class FrameWatch implements EnvelopeSink {
  endPayload: Uint8Array | undefined;
  compressed = false;
  /** A message declared larger than MAX_FRAME_BYTES: the relay fails before buffering it. */
  oversized = false;
  /** Past the end-of-stream (or a compressed or oversized) frame: nothing after it counts. */
  private stopped = false;
  /** The frame being collected is a chunk the timing needs only the token count of. */
  private countOnly = false;

  constructor(
    private readonly endFlag: number,
    private readonly timing: StreamTiming,
  ) {}

  frame(flags: number, length: number, tag: number): boolean {
    if (this.stopped) return false;
    if (length > MAX_FRAME_BYTES) {
      this.stopped = this.oversized = true;
      return false;
    }
    if ((flags & this.endFlag) !== 0) return (this.stopped = true);
    if ((flags & COMPRESSED_FLAG) !== 0) {
      this.stopped = this.compressed = true;
      return false;
    }
    this.countOnly = tag === CHUNK_TAG && !this.timing.awaitingFirstToken;
    return tag === COMPLETE_TAG || tag === CHUNK_TAG;
  }

  payload(flags: number, data: Uint8Array): void {
    if ((flags & this.endFlag) !== 0) {
      this.endPayload = data.slice(); // lent by the scanner: a view of a buffer reused
      return;
    }
    if (this.countOnly) {
      const usage = chunkUsage(data);
      if (usage) this.timing.observeUsage(usage);
      return;
    }
    try {
      this.timing.observe(fromBinary(GenerateResponseSchema, data));
    } catch {
      // Watched for metrics only: the client decodes the frame itself, as the engine sent it.
    }
  }
}
