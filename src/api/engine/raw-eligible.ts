// Whether a streamed Generate can be relayed as the engine's raw frames: the client speaks a
// binary enveloped format (application/connect+proto, application/grpc-web+proto), sends no
// compressed request, and sets no deadline (connect-es would enforce it mid-stream). A client
// that accepts compressed responses still qualifies: compression is per message (the
// envelope's flag), connect-es itself sends messages under 1 KiB uncompressed, and the raw
// relay sends every message as the engine did (uncompressed; the engine leg asks for none).
// The engine's transport is checked per leg (backends/vllm-engine-raw-call.ts). Pure.
import type { WireFormat } from "./content-types.js";

const TIMEOUT_HEADER = { connect: "connect-timeout-ms", "grpc-web": "grpc-timeout" } as const;

export function rawRelayProtocol(format: WireFormat, header: Headers): "connect" | "grpc-web" | undefined {
  if (!format.binary || !format.enveloped) return undefined;
  const sent = header.get(format.encodingHeader);
  if (sent !== null && sent !== "" && sent !== "identity") return undefined;
  if (header.has(TIMEOUT_HEADER[format.protocol])) return undefined;
  return format.protocol;
}
