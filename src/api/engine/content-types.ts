// Which content types the VllmEngine surface accepts, per method kind, and what a content type
// says about the body: enveloped or not, binary or JSON, which header names its compression.
// Mirrors connect-es's own matching (protocol-connect/content-type.ts, protocol-grpc-web/
// content-type.ts) so the gateway can answer a mismatch itself, with a message that lists what
// would have worked, instead of connect-es's bare 415. Pure.
import type { DescMethod } from "@bufbuild/protobuf";

export interface WireFormat {
  protocol: "connect" | "grpc-web";
  /** Messages carry the 5-byte envelope (Connect streaming, gRPC-web). */
  enveloped: boolean;
  binary: boolean;
  /** The request header that names the request's compression. */
  encodingHeader: "content-encoding" | "connect-content-encoding" | "grpc-encoding";
}

const CONNECT_UNARY = /^application\/(?:(json)(?:; ?charset=utf-?8)?|proto)$/i;
const CONNECT_STREAM = /^application\/connect\+(?:(json)(?:; ?charset=utf-?8)?|proto)$/i;
const GRPC_WEB = /^application\/grpc-web(?:\+(?:(json)(?:; ?charset=utf-?8)?|proto))?$/i;

/** The wire format a content type names for a method, or undefined when the method cannot be
 *  called with it (Connect streaming types for unary methods and the other way round). */
export function wireFormatOf(contentType: string | null, method: DescMethod): WireFormat | undefined {
  const ct = (contentType ?? "").trim();
  const unary = method.methodKind === "unary";
  let m = GRPC_WEB.exec(ct);
  if (m) return { protocol: "grpc-web", enveloped: true, binary: !m[1], encodingHeader: "grpc-encoding" };
  m = (unary ? CONNECT_UNARY : CONNECT_STREAM).exec(ct);
  if (m) return { protocol: "connect", enveloped: !unary, binary: !m[1], encodingHeader: unary ? "content-encoding" : "connect-content-encoding" };
  return undefined;
}

/** What a client may send to a method, for the 415 message. */
export function acceptedContentTypes(method: DescMethod): string[] {
  const connect = method.methodKind === "unary" ? ["application/proto", "application/json"] : ["application/connect+proto", "application/connect+json"];
  return [...connect, "application/grpc-web+proto", "application/grpc-web+json"];
}
