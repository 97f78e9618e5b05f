// How an engine leg's failure becomes the client's error: one table for every leg, phase and
// transport (pd-reference 2.10 for VllmEngine engines, 6 for OpenAI HTTP engines). Each
// message ends by naming the leg and the engine's configured name; its URL goes only to the
// log. Pure.
import { Code } from "../core/grpc-code.js";
import { GatewayError, UpstreamStatusError } from "../core/errors.js";
import type { LegFailure } from "../core/leg-transport.js";
import type { Leg } from "../core/types.js";

/** Where in the leg's life it failed: before its first frame, after it, or by timing out. */
export type LegPhase = "start" | "stream" | "timeout";

const CODE_PREFIX: Record<Leg, "prefill" | "decode" | "engine"> = { prefill: "prefill", decode: "decode", regular: "engine" };
const LABEL: Record<Leg, string> = { prefill: "Prefill", decode: "Decode", regular: "Engine" };
/** Upstream's words for an engine that failed before its first frame (pd-reference 2.10). */
const START_LABEL: Record<Leg, string> = { prefill: "Prefill worker", decode: "Decode worker", regular: "Engine" };

/** " (decode engine 'decode-0')": which leg and which engine, for the client's message. */
export function engineSuffix(leg: Leg, engine: string): string {
  return ` (${leg === "regular" ? "" : `${leg} `}engine '${engine}')`;
}

export function legError(leg: Leg, phase: LegPhase, engine: string, f: LegFailure, timeoutMs?: number): GatewayError {
  const code = CODE_PREFIX[leg];
  const label = LABEL[leg];
  const who = engineSuffix(leg, engine);
  if (phase === "timeout") {
    const what = leg === "prefill" ? `did not finish within ${timeoutMs} ms` : `sent no first frame within ${timeoutMs} ms`;
    return new GatewayError(`${code}_timeout`, 504, `${START_LABEL[leg]} ${what}${who}`, Code.DeadlineExceeded);
  }
  const startCode = leg === "regular" ? "engine_failed_to_start" : `${code}_worker_failed_to_start`;
  switch (f.kind) {
    case "rpc":
      return phase === "start"
        ? new GatewayError(startCode, f.status, `${START_LABEL[leg]} failed to start: ${f.message}${who}`, f.connectCode)
        : new GatewayError(`${code}_stream_error`, f.status, `${label} stream error: ${f.message}${who}`, f.connectCode);
    case "malformed":
      // A broken engine, never the client's fault: retried and counted like an unavailable one.
      return new GatewayError(phase === "start" ? startCode : `${code}_stream_error`, 502, `${label} sent a malformed response: ${f.message}${who}`, Code.Unavailable);
    case "transport":
      return phase === "start"
        ? new GatewayError(`${code}_request_failed`, 502, `${label} transport error: ${f.message}${who}`)
        : new GatewayError(`${code}_stream_error`, 502, `${label} stream error: ${f.message}${who}`);
    case "read":
      return phase === "start" || leg === "prefill"
        ? new GatewayError(`${code}_read_failed`, 502, `${label} response could not be read: ${f.message}${who}`)
        : new GatewayError(`${code}_stream_error`, 502, `${label} stream error: ${f.message}${who}`);
    case "status": {
      // Prefill passes the engine's status through; decode and regular engines map it to
      // their stable code (pd-reference 6). The engine's own message comes first.
      // A prefill failure is a plain JSON error even for a streaming request: no event stream
      // was ever started for it.
      if (leg === "prefill") return new GatewayError("prefill_upstream_error", f.status, `${f.message}${who}`);
      const mapped = legStatusError(code as "decode" | "engine", f.status);
      return new UpstreamStatusError(mapped.code, mapped.status, `${f.message}${who}`);
    }
  }
}

/** Code and status for a decode (or regular engine) leg's HTTP error status. */
export function legStatusError(prefix: "decode" | "engine", status: number): { code: string; status: number } {
  switch (status) {
    case 400:
      return { code: `${prefix}_bad_request`, status };
    case 404:
      return { code: `${prefix}_not_found`, status };
    case 500:
      return { code: `${prefix}_internal_error`, status };
    case 502:
      return { code: `${prefix}_bad_gateway`, status };
    case 503:
      return { code: `${prefix}_unavailable`, status };
    default:
      return { code: `${prefix}_error`, status: 500 };
  }
}
