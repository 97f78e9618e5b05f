// The one decision on whether a PD request's prefill leg runs. Both executors (gRPC in
// plan.ts, for every transport) calls this and nothing else decides it.
import type { SkipReason } from "../core/types.js";

export interface SkipPrefillInputs {
  /** n <= 1: the single-consumer KV handoff can be relayed to decode. With n > 1 every decode
   *  child would pull the same blocks and the first to finish frees them under its siblings,
   *  so relay is off and the handoff, the prefill leg's only product, would go unused. */
  relayKvParams: boolean;
  /** EPD: encode engines hand their embeddings to the prefill engine, so decode depends on
   *  the prefill leg having run even without a KV relay. */
  hasEncodeAssignments: boolean;
  /** Multimodal inputs (pixels) ride only the prefill leg on the gRPC path; skipping it would
   *  drop work decode cannot see. Always false over HTTP, which sends the full body to both legs. */
  hasMmInputs: boolean;
  /** Mooncake (any mode) points decode at the prefill engine's bootstrap address, which only
   *  holds KV if prefill ran. Always false over HTTP (no typed bootstrap form there). */
  decodeNeedsPrefillBootstrap: boolean;
}

/** True iff nothing downstream needs the prefill leg: the fan-out (n > 1) case with no
 *  encode assignments, no multimodal inputs and no bootstrap addressing (ARCHITECTURE decision 1). */
export function shouldSkipPrefill(inputs: SkipPrefillInputs): boolean {
  return (
    !inputs.relayKvParams &&
    !inputs.hasEncodeAssignments &&
    !inputs.hasMmInputs &&
    !inputs.decodeNeedsPrefillBootstrap
  );
}

/** n as the engines see it: unset or 0 means 1. */
export function normaliseN(n: number | undefined | null): number {
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? Math.floor(n) : 1;
}

/** relay_kv_params = n <= 1 (pd-reference 2.2). */
export function relayKvParams(n: number | undefined | null): boolean {
  return normaliseN(n) <= 1;
}

/** The value of the `x-pd-prefill` header for a decision. */
export function prefillDecisionHeader(skipReason: SkipReason | undefined): string {
  return skipReason !== undefined ? `skipped; reason=${skipReason}` : "ran";
}
