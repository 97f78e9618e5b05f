// Connect's `Code` enum (the gRPC status codes, fixed by the gRPC spec), spelled out so that the
// modules every request loads do not import @connectrpc/connect's index: in a bundle with a
// lazily imported surface, importing that index initialises all of Connect and protobuf's
// runtime and descriptors at the isolate's start-up. A unit test checks it against Connect's.
import type { Code as ConnectCode } from "@connectrpc/connect";

export type Code = ConnectCode;

const names = [
  "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied",
  "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable",
  "DataLoss", "Unauthenticated",
] as const;

const table: Record<string | number, string | number> = {};
names.forEach((name, i) => {
  table[name] = i + 1;
  table[i + 1] = name;
});

export const Code = table as unknown as typeof ConnectCode;
