// Decoding that skips special tokens but keeps the few a tool-call format reads as markers
// (`<|python_tag|>`, `[TOOL_CALLS]`, ...): HF's skip_special_tokens would drop them with the
// rest, and vLLM turns skipping off for such parsers, which would let EOS and the like into
// the text. Dropping the other special ids first, then decoding without skipping, gives the
// text skip_special_tokens gives plus the markers.
import type { Decoder } from "./detokenizer.js";
import type { DecodeOptions } from "./tokenizer.js";

export interface SpecialTokenSource extends Decoder {
  tokenToId(token: string): number | undefined;
  readonly specialTokenIds: ReadonlySet<number>;
}

/** `tok` itself when none of `markers` is a special token of it. */
export function keepingSpecialTokens(tok: SpecialTokenSource, markers: readonly string[]): Decoder {
  const special = tok.specialTokenIds;
  const keep = new Set<number>();
  for (const m of markers) {
    const id = tok.tokenToId(m);
    if (id !== undefined && special.has(id)) keep.add(id);
  }
  if (keep.size === 0) return tok;
  return {
    decode(ids: readonly number[], options?: DecodeOptions): string {
      if (options?.skipSpecialTokens === false) return tok.decode(ids, options);
      return tok.decode(ids.filter((id) => !special.has(id) || keep.has(id)), { skipSpecialTokens: false });
    },
  };
}
