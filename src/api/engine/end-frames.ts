// The end-of-stream frame the gateway sends after a relayed Generate: the Connect
// EndStreamResponse or the gRPC-web trailer frame, serialised by connect-es's own functions
// with what its handlers put there (the handler's trailers, none for a relayed stream; the
// error, if any), so a stream ends in exactly the bytes a connect-es stream would.
import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { createEndStreamSerialization, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { grpcStatusOk, setTrailerStatus, trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";

const endStream = createEndStreamSerialization(undefined);

/** The trailers a handler starts with, as connect-es's handlers set them. */
export function initialTrailer(protocol: "connect" | "grpc-web"): Record<string, string> {
  return protocol === "connect" ? {} : { "grpc-status": grpcStatusOk };
}

export function endFrame(protocol: "connect" | "grpc-web", error?: ConnectError, trailer = new Headers(initialTrailer(protocol))): Uint8Array {
  if (protocol === "connect") return encodeEnvelope(endStreamFlag, endStream.serialize({ metadata: trailer, ...(error ? { error } : {}) }));
  if (error) setTrailerStatus(trailer, error);
  return encodeEnvelope(trailerFlag, trailerSerialize(trailer));
}
