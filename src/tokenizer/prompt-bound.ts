// The most UTF-8 bytes a prompt can have and still fit the context, known before tokenizing:
// no token covers more than `maxTokenBytes` bytes of the normalized text, and the normalizer
// shrinks text by at most `shrink`, so a prompt of more than
// contextLength * maxTokenBytes * shrink bytes has more than contextLength tokens. Sound, so
// it never refuses a prompt the engine would take; an operator's per-model
// `max_prompt_bytes` may lower it (and then may refuse some). Pure.

export interface NormalizerJson {
  type?: string;
  normalizers?: readonly NormalizerJson[];
}

/** The most a normalizer can shrink UTF-8 text (bytes in per byte out); Infinity when it can
 *  delete text (Strip, Replace, StripAccents, Precompiled, ...), and then no bound holds.
 *  NFC composes at most three code units into one (Hangul L+V+T: 9 bytes -> 3); NFKC also
 *  folds a 4-byte character into one byte (U+1D400 -> "A"); lowercasing folds a 3-byte
 *  character into one byte (U+212A KELVIN SIGN -> "k"). */
export function normalizerShrink(n: NormalizerJson | null | undefined): number {
  if (!n) return 1;
  switch (n.type) {
    case "NFC":
    case "NFD":
      return 3;
    case "NFKC":
    case "NFKD":
      return 4;
    case "Lowercase":
      return 3;
    case "Prepend":
      return 1;
    case "Sequence":
      return (n.normalizers ?? []).reduce((f, x) => f * normalizerShrink(x), 1);
    default:
      return Infinity;
  }
}

export interface PromptBoundInput {
  /** The model's context length, in tokens (undefined: unknown, no bound). */
  contextLength: number | undefined;
  /** The most bytes of normalized text one token covers. */
  maxTokenBytes: number;
  shrink: number;
  /** The model can fuse any run of unknown characters into one token: no bound holds. */
  fusesUnknown: boolean;
  /** The operator's `models.<m>.max_prompt_bytes`. */
  configured?: number;
}

/** The prompt byte bound, or undefined when there is none. */
export function promptByteBound(i: PromptBoundInput): number | undefined {
  const derived = i.contextLength === undefined || i.fusesUnknown || !Number.isFinite(i.shrink) ? Infinity : i.contextLength * i.maxTokenBytes * i.shrink;
  const bound = Math.min(derived, i.configured ?? Infinity);
  return Number.isFinite(bound) ? bound : undefined;
}

