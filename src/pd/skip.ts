// The one decision on whether a PD request's prefill leg runs (ARCHITECTURE decisions 1 and
// 13). The plan (plan.ts) calls this for every transport, and nothing else decides it. A
// prefill leg runs only when it pays, and always when the decode leg depends on it.
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
  /** The prompt's token count (exact where the gateway has token ids, else estimated). */
  promptTokens?: number;
  /** Prompts below this many tokens cost decode less to compute than the leg's round trip
   *  and KV pull; 0 = off (model config pd.decode_only_max_prompt_tokens). */
  decodeOnlyMaxPromptTokens?: number;
  /** Requests waiting at the selected prefill and decode engines, as they last reported. */
  prefillWaiting?: number;
  decodeWaiting?: number;
  /** Skip while prefill has at least this many waiting (and decode fewer than its own
   *  limit): queueing there costs more than decode computing the prompt. Unset = off. */
  prefillQueueLimit?: number;
  decodeQueueLimit?: number;
}

/** Why the prefill leg can be skipped, or undefined when it runs. A guard (something decode
 *  needs from prefill) always wins; then fan-out, a short prompt, a busy prefill pool. */
export function prefillSkipReason(i: SkipPrefillInputs): SkipReason | undefined {
  if (i.hasEncodeAssignments || i.hasMmInputs || i.decodeNeedsPrefillBootstrap) return undefined;
  if (!i.relayKvParams) return "fanout";
  const threshold = i.decodeOnlyMaxPromptTokens ?? 0;
  if (threshold > 0 && i.promptTokens !== undefined && i.promptTokens < threshold) return "short_prompt";
  if (i.prefillQueueLimit !== undefined && i.prefillWaiting !== undefined && i.prefillWaiting >= i.prefillQueueLimit) {
    const decodeLimit = i.decodeQueueLimit ?? i.prefillQueueLimit;
    if ((i.decodeWaiting ?? 0) < decodeLimit) return "prefill_busy";
  }
  return undefined;
}

/** True iff nothing downstream needs the prefill leg and it does not pay (decision 1, 13). */
export function shouldSkipPrefill(inputs: SkipPrefillInputs): boolean {
  return prefillSkipReason(inputs) !== undefined;
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
