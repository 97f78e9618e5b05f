// The end-of-stream frame the gateway sends after a relayed Generate: the Connect
// EndStreamResponse or the gRPC-web trailer frame, serialised by connect-es's own functions
// with what its handlers put there (no trailers of the handler's; the error, if any), so a
// relayed stream ends in exactly the bytes a connect-es stream would.
import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { createEndStreamSerialization, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { grpcStatusOk, setTrailerStatus, trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";

const endStream = createEndStreamSerialization(undefined);

export function endFrame(protocol: "connect" | "grpc-web", error?: ConnectError): Uint8Array {
  if (protocol === "connect") return encodeEnvelope(endStreamFlag, endStream.serialize({ metadata: new Headers(), ...(error ? { error } : {}) }));
  const trailer = new Headers({ "grpc-status": grpcStatusOk });
  if (error) setTrailerStatus(trailer, error);
  return encodeEnvelope(trailerFlag, trailerSerialize(trailer));
}
