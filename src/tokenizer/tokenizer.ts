// The model's tokenizer at the edge: @huggingface/tokenizers (pure JS, no WASM) over the bundle's
// tokenizer.json + tokenizer_config.json. The library is imported lazily so a Worker that never
// serves OpenAI-over-VllmEngine traffic does not pay for evaluating it at startup.
import { bundleJson, type TokenizerBundle } from "./bundle.js";
import { TokenizerBundleError } from "./errors.js";

export interface EncodeOptions {
  /** Add the post-processor's special tokens (BOS and the like). HF's default is true; a
   *  rendered chat prompt already has them, so chat encodes with false. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  skipSpecialTokens?: boolean;
}

export interface EdgeTokenizer {
  encode(text: string, options?: EncodeOptions): number[];
  decode(ids: readonly number[], options?: DecodeOptions): string;
  tokenToId(token: string): number | undefined;
  /** Ids of added tokens marked special (what skip_special_tokens drops). */
  readonly specialTokenIds: ReadonlySet<number>;
  /** Every id that ends generation: generation_config.json, then config.json, then the
   *  tokenizer's eos_token, deduplicated in that order (vLLM stops on all of them). */
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | undefined;
  /** tokenizer_config.json, for the chat template's special-token variables. */
  readonly config: Readonly<Record<string, unknown>>;
}

interface HfTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  token_to_id(token: string): number | undefined;
  get_added_tokens_decoder(): Map<number, { special: boolean }>;
}

/** The token text of a tokenizer_config special-token entry (a string or an AddedToken dict). */
export function specialTokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && typeof (value as { content?: unknown }).content === "string") {
    return (value as { content: string }).content;
  }
  return undefined;
}

function idList(value: unknown): number[] {
  if (typeof value === "number" && Number.isInteger(value)) return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === "number" && Number.isInteger(v));
  return [];
}

export async function loadTokenizer(bundle: TokenizerBundle): Promise<EdgeTokenizer> {
  const tokenizerJson = bundleJson(bundle, "tokenizer.json");
  const config = bundleJson(bundle, "tokenizer_config.json") ?? {};
  const { Tokenizer } = await import("@huggingface/tokenizers");
  let hf: HfTokenizer;
  try {
    hf = new Tokenizer(tokenizerJson as object, config) as unknown as HfTokenizer;
  } catch (err) {
    throw new TokenizerBundleError("invalid_file", `tokenizer.json could not be loaded (${(err as Error).message})`, { cause: err });
  }
  const special = new Set<number>();
  for (const [id, tok] of hf.get_added_tokens_decoder()) if (tok.special) special.add(id);

  const eos: number[] = [];
  const addEos = (ids: number[]) => ids.forEach((id) => eos.includes(id) || eos.push(id));
  addEos(idList(bundleJson(bundle, "generation_config.json")?.eos_token_id));
  addEos(idList(bundleJson(bundle, "config.json")?.eos_token_id));
  const eosText = specialTokenText(config.eos_token);
  const eosId = eosText === undefined ? undefined : hf.token_to_id(eosText);
  if (eosId !== undefined) addEos([eosId]);
  const bosText = specialTokenText(config.bos_token);

  return {
    encode: (text, options) => hf.encode(text, { add_special_tokens: options?.addSpecialTokens ?? true }).ids,
    // The library refuses an empty id list; the empty text is the right answer for it.
    decode: (ids, options) => (ids.length === 0 ? "" : hf.decode([...ids], { skip_special_tokens: options?.skipSpecialTokens ?? false })),
    tokenToId: (token) => hf.token_to_id(token),
    specialTokenIds: special,
    eosTokenIds: eos,
    bosTokenId: bosText === undefined ? undefined : hf.token_to_id(bosText),
    config,
  };
}
