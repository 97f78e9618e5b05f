// The encode pipeline of @huggingface/tokenizers (Tokenizer.encode_text, then the
// post-processor), rebuilt on the library's own parts so that it runs in steps: added tokens
// are split off, the normalizer runs per section, the pre-tokenizer's Split regex is matched
// lazily, and each piece goes through the model on its own. Ids land in `out` as they are
// made, and the generator yields the work done (characters consumed, merges run), so a driver
// can stop once the prompt has more tokens than the context holds and pause between slices
// (other requests on the isolate run meanwhile). Same steps in the same order as the library,
// so the same ids, which the parity suite checks against HF's Rust tokenizer. Pieces of
// LONG_WORD characters or more skip the library's model for MergeTable/WordMerge (the
// library's merge loop costs ~10 µs and hundreds of bytes per character of one long word).
import { MergeTable, WordMerge, type MergeLookup } from "./bpe-merge.js";
import { TokenizerLimitError } from "./errors.js";
import type { NormalizerJson } from "./prompt-bound.js";

/** From this many characters a piece is merged by WordMerge (the library caches shorter
 *  pieces' merges, which is the common case). */
const LONG_WORD = 256;
/** Merges per slice of one long word. */
const MERGE_SLICE = 32_768;
/** The work of a merge relative to a character through the library's path. */
const MERGES_PER_UNIT = 8;

type Trie = Record<string, unknown> & { end?: string };
interface Added {
  id: number;
  lstrip: boolean;
  rstrip: boolean;
}
type PreTok = ((text: string | string[], options?: unknown) => string[]) & { pre_tokenize(text: string[], options?: unknown): string[] };
interface HfModel {
  (tokens: string[]): string[];
  tokens_to_ids: Map<string, number>;
  unk_token_id?: number;
  vocab: string[];
  merges?: [string, string][];
  ignore_merges?: boolean;
  fuse_unk?: boolean;
  end_of_word_suffix?: string;
  continuing_subword_suffix?: string | null;
  config?: { dropout?: number | null };
}

/** The parts of the library's Tokenizer this pipeline uses (its public fields). */
export interface HfParts {
  splitter_unnormalized: { trie: Trie };
  splitter_normalized: { trie: Trie };
  added_tokens_map: Map<string, Added>;
  remove_space?: boolean;
  do_lowercase_and_remove_accent?: boolean;
  normalizer: ((text: string) => string) | null;
  pre_tokenizer: (PreTok & { tokenizers?: (PreTok | null)[] }) | null;
  model: HfModel;
  post_processor: ((tokens: string[], pair: null, addSpecialTokens: boolean) => { tokens: string[] }) | null;
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}

/** The tokenizer.json sections that decide which shortcuts are exact. */
export interface TokenizerJsonShape {
  model?: { type?: string; dropout?: number | null };
  normalizer?: NormalizerJson | null;
  pre_tokenizer?: { type?: string; pretokenizers?: { type?: string; behavior?: string; invert?: boolean; use_regex?: boolean; add_prefix_space?: boolean }[] } | null;
}

export interface EncodeContext {
  /** Stop once `out` holds this many ids (or more are certain to come). */
  limit: number;
  /** Set when the limit was reached or is certain to be. */
  exceeded?: boolean;
  /** Longest piece WordMerge is given (memory: about 20 bytes per character). */
  maxWord: number;
}

export class EncodeSteps {
  private readonly added: Map<string, Added>;
  private readonly model: HfModel;
  private readonly firsts: { raw: RegExp | undefined; normalized: RegExp | undefined };
  /** The pre-tokenizer is Sequence[Split(regex, Isolated), ...rest]: matched lazily. */
  private readonly split: { pattern: RegExp; rest: (PreTok | null)[]; byteLevelRest: boolean } | undefined;
  /** Merges can be run by WordMerge (plain BPE: no dropout, affixes or unk fusing). */
  private readonly fastBpe: boolean;
  /** undefined: not built yet; null: the merges cannot be run by WordMerge. */
  private table: MergeLookup | undefined | null;
  private byteIds: Int32Array | undefined;
  /** The longest vocabulary string, in UTF-16 units: no token covers more symbols of a piece. */
  readonly maxTokenUnits: number;
  /** The most UTF-8 bytes of normalized text one token covers (prompt-bound.ts). */
  readonly maxTokenBytes: number;

  /** `prebuilt`: the merge table (null when the merges have no id table) and longest model
   *  token when the model was built from tables (bpe-tables.ts), whose vocabulary is not
   *  walked here. */
  constructor(
    private readonly hf: HfParts,
    json: TokenizerJsonShape,
    private readonly prebuilt?: { table: () => MergeLookup | null; longestToken: number },
  ) {
    this.added = hf.added_tokens_map;
    this.model = hf.model;
    this.firsts = { raw: firstUnits(hf.splitter_unnormalized.trie), normalized: firstUnits(hf.splitter_normalized.trie) };
    const m = this.model;
    this.fastBpe = json.model?.type === "BPE" && Array.isArray(m.merges) && !m.fuse_unk && !m.end_of_word_suffix && !m.continuing_subword_suffix && (json.model.dropout ?? null) === null;
    this.split = lazySplit(hf, json);
    let longest = 0;
    if (prebuilt) longest = prebuilt.longestToken;
    else for (const t of m.vocab) if (typeof t === "string" && t.length > longest && !this.added.has(t)) longest = t.length;
    let addedBytes = 0;
    const utf8 = new TextEncoder();
    for (const t of this.added.keys()) {
      longest = Math.max(longest, t.length);
      addedBytes = Math.max(addedBytes, utf8.encode(t).length);
    }
    this.maxTokenUnits = Math.max(1, longest);
    // A byte-level vocabulary writes one character per byte; otherwise a UTF-16 unit is at
    // most 3 bytes.
    this.maxTokenBytes = Math.max(this.maxTokenUnits * (byteLevel(json) ? 1 : 3), addedBytes);
  }

  /** Whether the model may fuse unknown characters into one token (then no length says
   *  how many tokens a text has at least). */
  get fusesUnknown(): boolean {
    return this.model.fuse_unk === true;
  }

  /** Encodes `text` into `out`, yielding work units; stops early when `ctx` says so. */
  *run(text: string, addSpecialTokens: boolean, out: number[], ctx: EncodeContext): Generator<number, void> {
    if (this.model.fuse_unk) {
      // Unknown characters fuse across pieces: only the library's whole-text pass is exact.
      append(out, this.hf.encode(text, { add_special_tokens: addSpecialTokens }).ids);
      return yield text.length;
    }
    let index = 0;
    for (const section of this.sections(text, this.hf.splitter_unnormalized.trie, this.firsts.raw)) {
      yield* this.section(section, index++, out, ctx);
      if (ctx.exceeded) return;
    }
    if (this.hf.post_processor) {
      const tokens = this.hf.post_processor(out.map((id) => this.model.vocab[id]!), null, addSpecialTokens).tokens;
      out.length = 0;
      append(out, this.idsOf(tokens));
    }
  }

  private *section(text: string, index: number, out: number[], ctx: EncodeContext): Generator<number, void> {
    if (text.length === 0) return;
    const added = this.added.get(text);
    if (added) {
      out.push(added.id);
      return yield 1;
    }
    let t = text;
    if (this.hf.remove_space === true) t = t.trim().split(/\s+/).join(" ");
    if (this.hf.do_lowercase_and_remove_accent) t = t.toLowerCase().replace(/\p{M}/gu, "");
    if (this.hf.normalizer !== null) t = this.hf.normalizer(t);
    yield t.length >> 4; // the normalizer's pass, native and fast
    if (t.length === 0) return;
    for (const sub of this.sections(t, this.hf.splitter_normalized.trie, this.firsts.normalized)) {
      if (sub.length === 0) continue;
      const a = this.added.get(sub);
      if (a) {
        out.push(a.id);
        yield 1;
        continue;
      }
      yield* this.pieces(sub, index, out, ctx);
      if (ctx.exceeded) return;
    }
  }

  /** Pre-tokenized pieces through the model, one by one. */
  private *pieces(sub: string, index: number, out: number[], ctx: EncodeContext): Generator<number, void> {
    const options = { section_index: index };
    if (this.split) {
      for (const piece of regexSplit(sub, this.split.pattern)) {
        if (this.split.byteLevelRest && this.fastBpe && piece.length >= LONG_WORD) {
          yield* this.longBytes(piece, out, ctx);
        } else {
          const words = this.split.rest.reduce<string[]>((w, pt) => (pt ? pt.pre_tokenize(w, options) : w), [piece]);
          for (const word of words) yield* this.word(word, out, ctx);
        }
        if (full(out, ctx)) return;
      }
      return;
    }
    const words = this.hf.pre_tokenizer ? this.hf.pre_tokenizer(sub, options) : [sub];
    yield sub.length >> 2;
    for (const word of words) {
      yield* this.word(word, out, ctx);
      if (full(out, ctx)) return;
    }
  }

  private *word(word: string, out: number[], ctx: EncodeContext): Generator<number, void> {
    if (this.fastBpe && word.length >= LONG_WORD && (yield* this.mergeTable())) {
      const ids = this.charIds(word);
      if (ids) return yield* this.merge(ids, word, out, ctx);
    }
    append(out, this.idsOf(this.model([word])));
    yield word.length;
  }

  /** A long piece of a byte-level model: its UTF-8 bytes are its symbols. */
  private *longBytes(piece: string, out: number[], ctx: EncodeContext): Generator<number, void> {
    const byteIds = this.byteLevelIds();
    if (!byteIds || !(yield* this.mergeTable())) {
      const words = this.split!.rest.reduce<string[]>((w, pt) => (pt ? pt.pre_tokenize(w) : w), [piece]);
      for (const word of words) yield* this.word(word, out, ctx);
      return;
    }
    const bytes = new TextEncoder().encode(piece);
    const ids = new Int32Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) ids[i] = byteIds[bytes[i]!]!;
    yield* this.merge(ids, this.model.ignore_merges ? byteLevelText(bytes) : "", out, ctx);
  }

  private *merge(ids: Int32Array, whole: string, out: number[], ctx: EncodeContext): Generator<number, void> {
    if (this.model.ignore_merges && whole !== "") {
      const id = this.model.tokens_to_ids.get(whole);
      if (id !== undefined) {
        out.push(id);
        return yield 1;
      }
    }
    // No token covers more than maxTokenUnits symbols: this word alone may settle it.
    if (out.length + Math.ceil(ids.length / this.maxTokenUnits) >= ctx.limit) {
      ctx.exceeded = true;
      return;
    }
    if (ids.length > ctx.maxWord) throw new TokenizerLimitError("run_too_long", `the prompt has a run of ${ids.length} characters that the tokenizer cannot split (at most ${ctx.maxWord})`);
    yield ids.length >> 3; // setting the word up
    const w = new WordMerge(ids, this.table!);
    while (!w.step(MERGE_SLICE)) yield MERGE_SLICE / MERGES_PER_UNIT;
    append(out, w.result());
  }

  /** Builds the merge table once, in slices (false when the model's merges cannot be). */
  private *mergeTable(): Generator<number, boolean> {
    if (this.table === undefined && this.prebuilt) this.table = this.prebuilt.table();
    if (this.table === undefined) {
      const m = this.model;
      this.table = (yield* MergeTable.build(m.merges ?? [], (t) => m.tokens_to_ids.get(t), m.vocab.length)) ?? null;
    }
    return this.table !== null;
  }

  /** Ids of the 256 byte-level characters, or undefined when the vocabulary lacks one. */
  private byteLevelIds(): Int32Array | undefined {
    if (!this.byteIds) {
      const ids = new Int32Array(256);
      for (let b = 0; b < 256; b++) {
        const id = this.model.tokens_to_ids.get(String.fromCharCode(BYTE_CHARS[b]!));
        if (id === undefined) return undefined;
        ids[b] = id;
      }
      this.byteIds = ids;
    }
    return this.byteIds;
  }

  /** A word's characters as ids, or undefined when one is not in the vocabulary (the
   *  library's path handles byte fallback and unknown tokens). */
  private charIds(word: string): Int32Array | undefined {
    const chars = Array.from(word);
    const ids = new Int32Array(chars.length);
    for (let i = 0; i < chars.length; i++) {
      const id = this.model.tokens_to_ids.get(chars[i]!);
      if (id === undefined) return undefined;
      ids[i] = id;
    }
    return ids;
  }

  /** The library's token-string -> id rule (Tokenizer.encode). */
  private idsOf(tokens: string[]): number[] {
    return tokens.map((t) => this.added.get(t)?.id ?? this.model.tokens_to_ids.get(t) ?? this.model.unk_token_id!);
  }

  /** The library's added-token split with its lstrip/rstrip rule, one section at a time. */
  private *sections(text: string, trie: Trie, firsts: RegExp | undefined): Generator<string> {
    let pending: string | undefined;
    let trimNext = false;
    for (let s of dictionarySplit(text, trie, firsts)) {
      if (trimNext) s = s.trimStart();
      const added = this.added.get(s);
      if (added?.lstrip && pending !== undefined) pending = pending.trimEnd();
      if (pending !== undefined) yield pending;
      pending = s;
      trimNext = added?.rstrip === true;
    }
    if (pending !== undefined) yield pending;
  }
}

function byteLevel(json: TokenizerJsonShape): boolean {
  const pt = json.pre_tokenizer;
  return pt?.type === "ByteLevel" || (pt?.type === "Sequence" && (pt.pretokenizers ?? []).some((p) => p.type === "ByteLevel"));
}

function append(out: number[], ids: readonly number[]): void {
  for (const id of ids) out.push(id);
}

/** Whether `out` holds as many ids as the context allows (so the driver stops). */
function full(out: number[], ctx: EncodeContext): boolean {
  if (out.length >= ctx.limit) ctx.exceeded = true;
  return ctx.exceeded === true;
}

/** The byte-level pre-tokenizer's text for `bytes` (for ignore_merges' whole-word lookup). */
function byteLevelText(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...Array.from(bytes.subarray(i, i + 8192), (b) => BYTE_CHARS[b]!));
  return s;
}

/** The pre-tokenizer's lazily matchable form, when it has one. */
function lazySplit(hf: HfParts, json: TokenizerJsonShape): EncodeSteps["split"] {
  const pt = json.pre_tokenizer;
  const parts = hf.pre_tokenizer?.tokenizers;
  if (pt?.type !== "Sequence" || !pt.pretokenizers || !parts || parts.length !== pt.pretokenizers.length) return undefined;
  const [first, ...rest] = pt.pretokenizers;
  const split = parts[0] as unknown as { pattern?: unknown } | null;
  if (first?.type !== "Split" || first.invert === true || first.behavior?.toLowerCase() !== "isolated" || !(split?.pattern instanceof RegExp)) return undefined;
  const byteLevelRest = rest.length === 1 && rest[0]?.type === "ByteLevel" && rest[0].use_regex === false && rest[0].add_prefix_space !== true;
  return { pattern: split.pattern, rest: parts.slice(1), byteLevelRest };
}

/** The library's regex_split (Split, behavior Isolated), one piece at a time. */
function* regexSplit(text: string, regex: RegExp): Generator<string> {
  let prev = 0;
  for (const match of text.matchAll(regex)) {
    const full = match[0];
    if (prev < match.index) yield text.slice(prev, match.index);
    if (full.length > 0) yield full;
    prev = match.index + full.length;
  }
  if (prev < text.length) yield text.slice(prev);
}

/** The library's DictionarySplitter.split, one section at a time; a scan for the first
 *  characters of added tokens jumps over text that cannot start one. */
function* dictionarySplit(text: string, trie: Trie, firsts: RegExp | undefined): Generator<string> {
  const n = text.length;
  let start = 0;
  let i = 0;
  while (i < n) {
    if (!firsts) break;
    firsts.lastIndex = i;
    const hit = firsts.exec(text);
    if (!hit) break;
    i = hit.index;
    let node: Trie | undefined = trie;
    let match: string | undefined;
    for (let j = i; j < n && (node = node[text[j]!] as Trie | undefined); j++) if (node.end) match = node.end;
    if (match) {
      if (i > start) yield text.slice(start, i);
      yield match;
      i += match.length;
      start = i;
    } else i++;
  }
  if (start < n) yield text.slice(start);
}

/** A regex for the UTF-16 units an added token can start with, or undefined for none. */
function firstUnits(trie: Trie): RegExp | undefined {
  const units = Object.keys(trie).filter((k) => k.length === 1);
  if (units.length === 0) return undefined;
  return new RegExp(`[${units.map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}]`, "g");
}

/** GPT-2's bytes_to_unicode: the character the byte-level pre-tokenizer writes for a byte. */
const BYTE_CHARS: number[] = (() => {
  const chars: number[] = new Array<number>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars[b] = printable ? b : 256 + extra++;
  }
  return chars;
})();
