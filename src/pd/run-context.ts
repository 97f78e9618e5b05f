// What both sequential executors (gRPC and HTTP) need from the request around them.
import type { EventSink } from "../metrics/events.js";
import { GatewayError } from "./errors.js";

/** Bench/test-only overrides, honoured only when config.debug.allow_pd_overrides is on. */
export type PdOverride = "force-prefill" | "force-relay";

export interface PdRunContext {
  model: string;
  /** Fires when the client goes away. */
  clientSignal: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  events: EventSink;
  /** Cap on a deferred decode abort (ms). */
  deferredAbortMaxMs: number;
  mintTransferId(): string;
  override?: PdOverride;
  /** Told the prefill decision as soon as it is made (for the x-pd-prefill header). */
  onDecision?(skipped: boolean): void;
  now?: () => number;
}

/** The `x-pd-override` header's value, honoured only when the config allows overrides. */
export function pdOverrideOf(headers: Headers, allowed: boolean): PdOverride | undefined {
  const v = headers.get("x-pd-override");
  if (!v || !allowed) return undefined;
  if (v === "force-prefill" || v === "force-relay") return v;
  throw new GatewayError("invalid_override", 400, "x-pd-override: must be force-prefill or force-relay", undefined, "x-pd-override");
}
