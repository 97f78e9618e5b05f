// What a relay that pipes an engine's stream natively (native-relay.ts) needs of the watch
// reading a copy of it behind the client: one per API's stream format (OpenAI SSE with
// [DONE], Anthropic's named events ending in message_stop). The ways a relayed stream ends are
// the same for every relay.
import type { GatewayError } from "../core/errors.js";

/** How a relayed stream ended. */
export interface RelayEnding {
  outcome: "completed" | "failed" | "cancelled";
  status: number;
  errorCode?: string;
}
export const COMPLETED: RelayEnding = { outcome: "completed", status: 200 };
export const CANCELLED: RelayEnding = { outcome: "cancelled", status: 499, errorCode: "client_cancelled" };
export function failedWith(err: GatewayError): RelayEnding {
  return { outcome: "failed", status: err.status, errorCode: err.code };
}

/** Bytes to send on, or the in-band error found (with the events before it, as text). */
export interface WatchResult {
  out?: Uint8Array;
  error?: { before: string; error: GatewayError };
}

export interface StreamWatch {
  /** TTFT from the first chunk's arrival, for a stream whose events are read behind it. */
  sawFirstChunk(): void;
  /** A chunk (or a batch) of the engine's bytes; an error ends what the watch learns: an
   *  in-band error event, or `<leg>_event_too_large`. */
  chunk(bytes: Uint8Array): WatchResult;
  /** An incomplete event's first bytes are held (not yet complete). */
  readonly holding: boolean;
  /** The stream's final event came ([DONE], message_stop). */
  readonly sawFinal: boolean;
  /** The engine's body ended: an error when the stream's final event never came. */
  close(): WatchResult;
  /** The error for a body that broke off. */
  brokenStream(detail: string): GatewayError;
  /** Told once, however the stream ends. */
  end(e: RelayEnding): void;
}
