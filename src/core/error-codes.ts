// Every stable error code the gateway emits, and the Connect (gRPC) code a Connect or gRPC-web
// client gets for it: one table, so the same code never reaches two clients as two different
// Connect codes. Pure. `test/unit/core/error-codes.test.ts` finds the codes in src/ and fails
// on one this table does not name; docs/api.md lists them for clients.
import { Code } from "./grpc-code.js";

/** A Connect code, or "status": the code's HTTP status decides (connectCodeForStatus), for the
 *  codes whose status is the engine's own answer. A leg error that carries the engine's own
 *  gRPC code keeps it (GatewayError's connectCode argument). */
export type ConnectMapping = Code | "status";

/** Codes the gateway raises itself. */
export const ERROR_CODES: Readonly<Record<string, ConnectMapping>> = {
  // The client's request is wrong: fixing it is the client's job.
  invalid_request: Code.InvalidArgument,
  invalid_json: Code.InvalidArgument,
  invalid_body: Code.InvalidArgument,
  invalid_envelope: Code.InvalidArgument,
  invalid_override: Code.InvalidArgument,
  unsupported_content: Code.InvalidArgument,
  unsupported_content_type: Code.InvalidArgument,
  unsupported_parameter: Code.InvalidArgument,
  chat_template_unsupported: Code.InvalidArgument,
  chat_template_error: Code.InvalidArgument,
  context_length_exceeded: Code.InvalidArgument,
  prompt_run_too_long: Code.InvalidArgument,
  model_required: Code.InvalidArgument,
  too_many_ids: Code.InvalidArgument,
  invalid_engine_url: Code.InvalidArgument,
  engine_model_mismatch: Code.InvalidArgument,
  conversation_too_large: Code.InvalidArgument,
  // A message larger than a limit, either way: gRPC's RESOURCE_EXHAUSTED (as connect-es's own
  // readMaxBytes and the raw relay's frame limit).
  body_too_large: Code.ResourceExhausted,
  headers_too_large: Code.ResourceExhausted,
  response_too_large: Code.ResourceExhausted,
  rate_limited: Code.ResourceExhausted,
  abort_rate_limited: Code.ResourceExhausted,
  // Who the caller is, and what exists.
  invalid_api_key: Code.Unauthenticated,
  admin_unauthorized: Code.Unauthenticated,
  engine_url_not_allowed: Code.PermissionDenied,
  model_not_found: Code.NotFound,
  response_not_found: Code.NotFound,
  engine_not_found: Code.NotFound,
  engine_exists: Code.AlreadyExists,
  // An unknown path or method is an unknown procedure to a Connect client (HTTP 404).
  route_not_found: Code.Unimplemented,
  unknown_method: Code.Unimplemented,
  registry_not_configured: Code.Unimplemented,
  // The gateway or its engines cannot serve now.
  config_invalid: Code.Unavailable,
  no_healthy_engine: Code.Unavailable,
  no_engine_available: Code.Unavailable,
  tokenizer_unavailable: Code.Unavailable,
  engine_unreachable: Code.Unavailable,
  pd_decode_missing_kv_transfer_params: Code.Unavailable,
  // The client ended it: went away, or asked for it with an Abort call.
  client_cancelled: Code.Canceled,
  request_aborted: Code.Canceled,
  internal_error: Code.Internal,
};

/** The prefixes of an engine leg's codes: `<leg>_<suffix>`, the regular engine's is "engine". */
export const LEG_CODE_PREFIXES = ["prefill", "decode", "engine"] as const;

/** Codes of an engine leg's failure (pd/leg-errors.ts, the OpenAI relays), by suffix. */
export const LEG_CODE_SUFFIXES: Readonly<Record<string, ConnectMapping>> = {
  timeout: Code.DeadlineExceeded,
  // Before the first frame / after it: the engine's own gRPC code when it gave one.
  worker_failed_to_start: "status",
  failed_to_start: "status",
  stream_error: "status",
  request_failed: Code.Unavailable,
  read_failed: "status",
  event_too_large: Code.ResourceExhausted,
  // An OpenAI HTTP engine's error status (pd-reference 6), kept or mapped to the leg's code.
  upstream_error: "status",
  bad_request: "status",
  not_found: "status",
  internal_error: "status",
  bad_gateway: "status",
  unavailable: "status",
  error: "status",
};

/** The table's entry for a code, or undefined when the table does not know it. */
export function connectMappingOf(code: string): ConnectMapping | undefined {
  if (Object.hasOwn(ERROR_CODES, code)) return ERROR_CODES[code];
  const prefix = LEG_CODE_PREFIXES.find((p) => code.startsWith(`${p}_`));
  const suffix = prefix === undefined ? undefined : code.slice(prefix.length + 1);
  return suffix !== undefined && Object.hasOwn(LEG_CODE_SUFFIXES, suffix) ? LEG_CODE_SUFFIXES[suffix] : undefined;
}

/** The Connect code for a gateway code with this HTTP status. */
export function connectCodeFor(code: string, status: number): Code {
  const m = connectMappingOf(code);
  return m === undefined || m === "status" ? connectCodeForStatus(status) : m;
}

/** HTTP status -> Connect code, for the codes whose status is an engine's answer. */
export function connectCodeForStatus(status: number): Code {
  if (status === 400 || status === 422) return Code.InvalidArgument;
  if (status === 401) return Code.Unauthenticated;
  if (status === 403) return Code.PermissionDenied;
  if (status === 404) return Code.NotFound;
  if (status === 409) return Code.Aborted;
  if (status === 413 || status === 431) return Code.ResourceExhausted;
  if (status === 415) return Code.InvalidArgument;
  if (status === 429) return Code.ResourceExhausted;
  if (status === 499) return Code.Canceled;
  if (status === 501) return Code.Unimplemented;
  if (status === 502 || status === 503) return Code.Unavailable;
  if (status === 504 || status === 408) return Code.DeadlineExceeded;
  return Code.Internal;
}
