// The model's tokenizer at the edge: @huggingface/tokenizers (pure JS, no WASM) over the bundle's
// tokenizer.json + tokenizer_config.json. The library is imported lazily so a Worker that never
// serves OpenAI-over-VllmEngine traffic does not pay for evaluating it at startup.
import type { MergeLookup } from "./bpe-merge.js";
import { installBpe, type BpeMerges, type BpeVocab, type LibBpeModel } from "./bpe-tables.js";
import { bundleJson, type TokenizerBundle } from "./bundle.js";
import { EncodeSteps, type EncodeContext, type HfParts, type TokenizerJsonShape } from "./encode-steps.js";
import { TokenizerBundleError } from "./errors.js";
import { scanBpeTokenizerJson } from "./bpe-scan.js";
import { fastFormOf, lazyFastForm, type FastForm } from "./fast-form.js";
import { decodeUtf8 } from "./utf8.js";
import { normalizerShrink, promptByteBound } from "./prompt-bound.js";

export interface EncodeOptions {
  /** Add the post-processor's special tokens (BOS and the like). HF's default is true; a
   *  rendered chat prompt already has them, so chat encodes with false. */
  addSpecialTokens?: boolean;
}

export interface BoundedEncodeOptions extends EncodeOptions {
  /** Stop as soon as the prompt has this many tokens (the context length). */
  maxTokens: number;
  /** Lets other requests run between slices of the work (default: a zero timer). */
  pause?: () => Promise<unknown>;
}

/** The ids, or `exceeded`: the prompt has at least `maxTokens` tokens (it was not finished). */
export type BoundedEncode = { ids: number[]; exceeded?: undefined } | { exceeded: true; atLeast: number; ids?: undefined };

export interface DecodeOptions {
  skipSpecialTokens?: boolean;
}

export interface EdgeTokenizer {
  encode(text: string, options?: EncodeOptions): number[];
  /** encode, in slices with a pause between them, stopped once `maxTokens` is reached. Throws
   *  TokenizerLimitError for a run longer than it merges (MAX_PROMPT_RUN). */
  encodeWithin(text: string, options: BoundedEncodeOptions): Promise<BoundedEncode>;
  /** The most UTF-8 bytes a prompt can have and fit `contextLength` tokens (prompt-bound.ts),
   *  lowered to `configured` when the operator set one; undefined when none holds. */
  promptByteBound(contextLength: number | undefined, configured?: number): number | undefined;
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

/** Work units (about one character through the library's model) between two pauses: a few
 *  milliseconds of CPU, so other requests on the isolate wait at most that long. */
export const SLICE_UNITS = 4096;
/** The longest unbroken run (pre-token) merged, in symbols (bytes for byte-level models):
 *  WordMerge needs about 20 bytes per symbol, and an isolate has 128 MB. */
export const MAX_PROMPT_RUN = 1 << 20;

interface HfTokenizer extends HfParts {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  token_to_id(token: string): number | undefined;
  get_added_tokens_decoder(): Map<number, { special: boolean }>;
  added_tokens: { content: string; id: number }[];
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

let library: Promise<typeof import("@huggingface/tokenizers")> | undefined;
const tokenizersModule = () => (library ??= import("@huggingface/tokenizers"));

/** Starts loading the tokenizer library (a cold isolate does it while the bundle downloads:
 *  its evaluation is tens of milliseconds of the first request otherwise). */
export function preloadTokenizer(): void {
  tokenizersModule().catch(() => {
    library = undefined; // a failure shows, and is retried, where the library is used
  });
}

/** The tokenizer from a bundle's ZIP files. `plain` builds it with the library's own
 *  constructor (the reference the fast form is checked against); otherwise a BPE model is
 *  built from id tables (bpe-tables.ts), which is faster and gives the same ids. */
export async function loadTokenizer(bundle: TokenizerBundle, options: { plain?: boolean } = {}): Promise<EdgeTokenizer> {
  return (await loadTokenizerAndFastForm(bundle, options)).tokenizer;
}

/** A tokenizer and the way to its bundle's fast form. */
export interface LoadedTokenizer {
  tokenizer: EdgeTokenizer;
  /** The bundle's fast form (undefined when the model has none). For a BPE tokenizer just read
   *  from tokenizer.json this first resolves its merges to ids, in slices with `pause` between
   *  them (a zero timer by default), and switches the tokenizer to the id table: work for
   *  after the response (waitUntil). Once; later calls get the same promise. */
  fastForm(pause?: () => Promise<unknown>): Promise<FastForm | undefined>;
  /** What serves the merge ranks now: the pairs' text (a ZIP just read, before fastForm() or a
   *  long run resolved them), id triples, or the library's own Map. */
  mergeTable(): "text" | "ids" | "library";
}

/** loadTokenizer, and the bundle's fast form. */
export async function loadTokenizerAndFastForm(bundle: TokenizerBundle, options: { plain?: boolean } = {}): Promise<LoadedTokenizer> {
  let text = bundle.files.get("tokenizer.json");
  const bytes = bundle.tokenizerJsonBytes ?? (text === undefined ? undefined : new TextEncoder().encode(text));
  if (!options.plain && bytes) {
    // The vocabulary read straight into tables from the UTF-8, the merges served by their
    // text until resolved; only the rest decoded and JSON.parsed.
    const scan = scanBpeTokenizerJson(bytes);
    const lazy = scan && (await lazyFastForm(bundle, scan));
    if (lazy) {
      const tokenizer = await build(lazy.files, lazy.tokenizerJson, lazy.vocab, { lazy: lazy.merges });
      return { tokenizer, fastForm: (pause) => lazy.finish(pause), mergeTable: () => (lazy.merges.resolved ? "ids" : "text") };
    }
  }
  if (text === undefined && bytes) {
    text = await decodeUtf8(bytes);
    if (text === undefined) throw new TokenizerBundleError("invalid_file", "tokenizer.json is not valid UTF-8");
  }
  const tokenizerJson = bundleJson({ ...bundle, files: new Map([["tokenizer.json", text ?? "{}"]]) }, "tokenizer.json") ?? {};
  const fastForm = options.plain ? undefined : fastFormOf(bundle, tokenizerJson);
  const tokenizer = fastForm ? await loadTokenizerFromFastForm(fastForm) : await build(bundle.files, tokenizerJson, undefined, undefined);
  return { tokenizer, fastForm: () => Promise.resolve(fastForm), mergeTable: () => (fastForm ? "ids" : "library") };
}

/** The tokenizer from its fast form (no unzip, no JSON.parse of the vocabulary). */
export function loadTokenizerFromFastForm(ff: FastForm): Promise<EdgeTokenizer> {
  return build(ff.files, ff.tokenizerJson, ff.bpe, ff.bpe);
}

async function build(files: ReadonlyMap<string, string>, tokenizerJson: Record<string, unknown>, vocab: BpeVocab | undefined, merges: BpeMerges | undefined): Promise<EdgeTokenizer> {
  const bundle: TokenizerBundle = { files, sha256: "", zipBytes: 0 };
  const config = bundleJson(bundle, "tokenizer_config.json") ?? {};
  const { Tokenizer } = await tokenizersModule();
  let hf: HfTokenizer;
  let prebuilt: { table: () => MergeLookup | null; longestToken: number } | undefined;
  try {
    hf = new Tokenizer(tokenizerJson as object, config) as unknown as HfTokenizer;
    if (vocab && merges) prebuilt = installBpe(hf.model as unknown as LibBpeModel, vocab, merges, hf.added_tokens);
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

  const steps = new EncodeSteps(hf, tokenizerJson as TokenizerJsonShape, prebuilt);
  const shrink = normalizerShrink((tokenizerJson as TokenizerJsonShape).normalizer);

  return {
    encode: (text, options) => {
      const out: number[] = [];
      const it = steps.run(text, options?.addSpecialTokens ?? true, out, { limit: Infinity, maxWord: Infinity });
      while (!it.next().done);
      return out;
    },
    encodeWithin: (text, options) => encodeWithin(steps, text, options),
    promptByteBound: (contextLength, configured) =>
      promptByteBound({ contextLength, maxTokenBytes: steps.maxTokenBytes, shrink, fusesUnknown: steps.fusesUnknown, ...(configured !== undefined ? { configured } : {}) }),
    // The library refuses an empty id list; the empty text is the right answer for it.
    decode: (ids, options) => (ids.length === 0 ? "" : hf.decode([...ids], { skip_special_tokens: options?.skipSpecialTokens ?? false })),
    tokenToId: (token) => hf.token_to_id(token),
    specialTokenIds: special,
    eosTokenIds: eos,
    bosTokenId: bosText === undefined ? undefined : hf.token_to_id(bosText),
    config,
  };
}

async function encodeWithin(steps: EncodeSteps, text: string, o: BoundedEncodeOptions): Promise<BoundedEncode> {
  const pause = o.pause ?? (() => new Promise((r) => setTimeout(r, 0)));
  const out: number[] = [];
  const ctx: EncodeContext = { limit: o.maxTokens, maxWord: MAX_PROMPT_RUN };
  const it = steps.run(text, o.addSpecialTokens ?? true, out, ctx);
  let budget = SLICE_UNITS;
  for (let r = it.next(); !r.done; r = it.next()) {
    if (ctx.exceeded || out.length >= o.maxTokens) return { exceeded: true, atLeast: Math.max(out.length, o.maxTokens) };
    budget -= r.value;
    if (budget <= 0) {
      await pause();
      budget = SLICE_UNITS;
    }
  }
  if (ctx.exceeded) return { exceeded: true, atLeast: Math.max(out.length, o.maxTokens) };
  return { ids: out };
}
