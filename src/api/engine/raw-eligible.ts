// Whether a streamed Generate can be relayed as the engine's raw frames: the client speaks a
// binary enveloped format (application/connect+proto, application/grpc-web+proto), sends no
// compressed request and asks for no compressed response (so connect-es would not compress
// the frames it sends), and sets no deadline (connect-es would enforce it mid-stream). The
// engine's transport is checked per leg (backends/vllm-engine-raw-call.ts). Pure.
import type { WireFormat } from "./content-types.js";

const ACCEPT_HEADER = { connect: "connect-accept-encoding", "grpc-web": "grpc-accept-encoding" } as const;
const TIMEOUT_HEADER = { connect: "connect-timeout-ms", "grpc-web": "grpc-timeout" } as const;
/** The compressions the surface offers (router.ts acceptCompression). */
const OFFERED = ["gzip"];

export function rawRelayProtocol(format: WireFormat, header: Headers): "connect" | "grpc-web" | undefined {
  if (!format.binary || !format.enveloped) return undefined;
  const sent = header.get(format.encodingHeader);
  // An empty encoding header is one connect-es refuses (Unimplemented): left to it.
  if (sent !== null && sent !== "identity") return undefined;
  if (header.has(TIMEOUT_HEADER[format.protocol])) return undefined;
  const accepted = header.get(ACCEPT_HEADER[format.protocol]) ?? "";
  if (accepted.split(",").some((name) => OFFERED.includes(name.trim()))) return undefined;
  return format.protocol;
}
