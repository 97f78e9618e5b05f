// The tokenizer's fast form (issue 30): what a cold isolate needs to build the tokenizer
// without unzipping the bundle or JSON.parse of its 11 MB tokenizer.json. A BPE model's
// vocabulary and merges are most of that file and most of its load time (the library builds a
// Map of the vocabulary and a Map keyed by JSON.stringify of every merge); here they are
// binary: the vocabulary as one UTF-8 blob with ids and UTF-16 lengths, the merges as id
// triples (left, right, merged) in rank order. Everything else (tokenizer.json without
// vocab/merges, and the bundle's other small files) is one JSON header.
//
// Layout (little-endian, sections 4-byte aligned):
//   "TKFF" | u32 version | u32 header bytes | header JSON | u32 n | u32 ids[n] | u32 lens[n]
//   | u32 blob bytes | blob | u32 m | u32 merges[3m] | sha256 of everything before (32 bytes)
// The trailing digest catches a truncated or corrupted cache entry; a mismatch is a miss.
import { IdMergeTable } from "./bpe-merge.js";
import type { ScannedBpe } from "./bpe-scan.js";
import type { TokenizerBundle } from "./bundle.js";
import { LazyMerges } from "./text-merges.js";
import { decodeUtf8 } from "./utf8.js";
import { VocabIndex } from "./vocab-index.js";

/** Bump when the layout or what is derived into it changes: the cache key includes it. */
export const FAST_FORM_VERSION = 1;
const MAGIC = 0x4646_4b54; // "TKFF"

/** A BPE model's vocabulary and merges, resolved to ids. */
export interface BpeTables {
  /** Model vocabulary (before added tokens): entry e is blob[sum(lens[..e]) ..][lens[e]]
   *  (UTF-16 units), with id ids[e]. */
  blob: string;
  lens: Uint32Array;
  ids: Uint32Array;
  /** Merge `rank` is (left, right) -> merged, at [3 * rank ...]. */
  merges: Uint32Array;
  /** The merge lookup over `merges`, when building the fast form already made it (in memory
   *  only: not part of the cached bytes). */
  table?: IdMergeTable;
}

/** What the tokenizer is built from: the bundle's files except tokenizer.json, and
 *  tokenizer.json itself with the model's vocab and merges taken out into `bpe`. */
export interface FastForm {
  sha256: string;
  files: ReadonlyMap<string, string>;
  tokenizerJson: Record<string, unknown>;
  bpe: BpeTables;
}

interface Header {
  version: number;
  sha256: string;
  files: Record<string, string>;
  tokenizerJson: Record<string, unknown>;
}

/** The fast form of a parsed bundle, or undefined when its model is not a BPE whose merges
 *  all resolve to distinct vocabulary ids (then the ZIP path is the only path). */
export function fastFormOf(bundle: TokenizerBundle, tokenizerJson: Record<string, unknown>): FastForm | undefined {
  const model = tokenizerJson.model as { type?: unknown; vocab?: unknown; merges?: unknown } | undefined;
  if (model?.type !== "BPE" || typeof model.vocab !== "object" || model.vocab === null || !Array.isArray(model.merges)) return undefined;
  const vocab = model.vocab as Record<string, unknown>;
  const keys = Object.keys(vocab);
  const ids = new Uint32Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const id = vocab[keys[i]!];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= 2 ** 31) return undefined;
    ids[i] = id;
  }
  const merges = model.merges as unknown[];
  const lefts: string[] = [];
  const rights: string[] = [];
  for (const m of merges) {
    // The library's reading of the old "a b" form: split(" ", 2).
    const [a, b] = typeof m === "string" ? m.split(" ", 2) : Array.isArray(m) ? (m as unknown[]) : [];
    if (typeof a !== "string" || typeof b !== "string") return undefined;
    lefts.push(a);
    rights.push(b);
  }
  const rest = { ...tokenizerJson, model: { ...model, vocab: {}, merges: [] } };
  const lens = new Uint32Array(keys.length);
  for (let i = 0; i < keys.length; i++) lens[i] = keys[i]!.length;
  const blob = keys.join("");
  const idOf = vocabOverlay(rest, blob, lens, ids);
  if (!idOf) return undefined;
  const merged = mergeIds(lefts, rights, idOf);
  if (!merged) return undefined;
  return { sha256: bundle.sha256, files: otherFiles(bundle), tokenizerJson: rest, bpe: { blob, lens, ids, merges: merged.merges, table: merged.table } };
}

/** A tokenizer.json read by bpe-scan.ts, before its merges are resolved to ids: what the
 *  first request needs (the vocabulary, the merges by text), and the way to the fast form. */
export interface LazyFastForm {
  files: ReadonlyMap<string, string>;
  tokenizerJson: Record<string, unknown>;
  vocab: { blob: string; lens: Uint32Array; ids: Uint32Array };
  merges: LazyMerges;
  /** Resolves the merges to ids (in slices, `pause` between them), which switches the
   *  tokenizer built over `merges` to the id table; then the fast form, or undefined when the
   *  merges cannot be resolved (no fast form: the text table keeps serving). Once. */
  finish(pause?: () => Promise<unknown>): Promise<FastForm | undefined>;
}

/** The scanned tokenizer.json as a LazyFastForm; undefined when the vocabulary has no fast
 *  form (then the caller parses the whole file). */
export async function lazyFastForm(bundle: TokenizerBundle, scan: ScannedBpe): Promise<LazyFastForm | undefined> {
  if ((scan.rest.model as { type?: unknown } | undefined)?.type !== "BPE") return undefined;
  const blob = await decodeUtf8(scan.blob);
  if (blob === undefined) return undefined;
  const { lens, ids } = scan;
  if (!vocabOverlay(scan.rest, blob, lens, ids)) return undefined;
  const added: { content: string; id: number }[] = [];
  for (const a of (scan.rest.added_tokens as { content?: unknown; id?: unknown }[] | undefined) ?? []) {
    if (typeof a.content === "string" && typeof a.id === "number") added.push({ content: a.content, id: a.id });
  }
  const merges = new LazyMerges(scan.merges, { blob: scan.blob, byteLens: scan.byteLens, ids, added });
  const files = otherFiles(bundle);
  const sha256 = bundle.sha256; // not the bundle: its tokenizer.json bytes can go
  let finished: Promise<FastForm | undefined> | undefined;
  return {
    files,
    tokenizerJson: scan.rest,
    vocab: { blob, lens, ids },
    merges,
    finish(pause = () => new Promise((r) => setTimeout(r, 0))) {
      return (finished ??= (async () => {
        for (const _ of merges.resolve()) await pause();
        const r = merges.resolved;
        return r ? { sha256, files, tokenizerJson: scan.rest, bpe: { blob, lens, ids, merges: r.merges, table: r.table } } : undefined;
      })());
    },
  };
}

/** The vocabulary's index with the added tokens overlaid as the library overlays them (merges
 *  resolve against that overlay); undefined when the tables could not mean what the library
 *  does: a token listed twice (JSON.parse keeps the last id; the tables would keep both), two
 *  tokens on one id, or an added token on the id of another string. */
function vocabOverlay(rest: Record<string, unknown>, blob: string, lens: Uint32Array, ids: Uint32Array): VocabIndex | undefined {
  const idOf = new VocabIndex(blob, lens, ids);
  if (idOf.repeats) return undefined;
  const used = new IdSet(ids);
  if (used.repeats) return undefined;
  for (const a of (rest.added_tokens as { content?: unknown; id?: unknown }[] | undefined) ?? []) {
    if (typeof a.content !== "string" || typeof a.id !== "number") continue;
    // Two strings on one id would share its merges by id but not by string.
    if (idOf.get(a.content) !== a.id && used.has(a.id)) return undefined;
    idOf.set(a.content, a.id);
    used.add(a.id);
  }
  return idOf;
}

/** A set of ids (a bitmap: a Set of 151k numbers took ~50 ms of a cold load). */
class IdSet {
  private readonly bits: Uint8Array;
  private readonly big = new Set<number>();
  readonly repeats: boolean = false;
  constructor(ids: Uint32Array) {
    let max = 0;
    for (let i = 0; i < ids.length; i++) if (ids[i]! > max) max = ids[i]!;
    this.bits = new Uint8Array(Math.min(max, 1 << 24) + 1);
    for (let i = 0; i < ids.length; i++) {
      if (this.has(ids[i]!)) this.repeats = true;
      this.add(ids[i]!);
    }
  }
  has(id: number): boolean {
    return id < this.bits.length ? this.bits[id] === 1 : this.big.has(id);
  }
  add(id: number): void {
    if (id < this.bits.length) this.bits[id] = 1;
    else this.big.add(id);
  }
}

function otherFiles(bundle: TokenizerBundle): Map<string, string> {
  return new Map([...bundle.files].filter(([name]) => name !== "tokenizer.json"));
}

/** Merges as id triples; undefined if one names a string outside the vocabulary or a pair
 *  repeats (the library keeps a repeated pair's last rank, the id table its first). */
function mergeIds(lefts: readonly string[], rights: readonly string[], idOf: VocabIndex): { merges: Uint32Array; table: IdMergeTable } | undefined {
  const out = new Uint32Array(lefts.length * 3);
  for (let rank = 0; rank < lefts.length; rank++) {
    const a = lefts[rank]!;
    const b = rights[rank]!;
    const left = idOf.get(a);
    const right = idOf.get(b);
    const merged = idOf.getJoined(a, b);
    if (left === undefined || right === undefined || merged === undefined) return undefined;
    out[3 * rank] = left;
    out[3 * rank + 1] = right;
    out[3 * rank + 2] = merged;
  }
  const table = new IdMergeTable(out);
  return table.repeats ? undefined : { merges: out, table };
}

/** The fast form as bytes (for the cross-isolate cache); undefined when a token is not
 *  well-formed UTF-16 (UTF-8 would change its length). */
export async function encodeFastForm(ff: FastForm): Promise<Uint8Array | undefined> {
  const utf8 = new TextEncoder();
  const header: Header = { version: FAST_FORM_VERSION, sha256: ff.sha256, files: Object.fromEntries(ff.files), tokenizerJson: ff.tokenizerJson };
  const headerBytes = utf8.encode(JSON.stringify(header));
  const blob = utf8.encode(ff.bpe.blob);
  if ((await decodeUtf8(blob)) !== ff.bpe.blob) return undefined;
  const n = ff.bpe.ids.length;
  const size = 12 + pad(headerBytes.length) + 4 + 8 * n + 4 + pad(blob.length) + 4 + ff.bpe.merges.byteLength;
  const out = new Uint8Array(size + 32);
  const view = new DataView(out.buffer);
  let at = 0;
  const u32 = (v: number) => {
    view.setUint32(at, v, true);
    at += 4;
  };
  const bytes = (b: Uint8Array) => {
    out.set(b, at);
    at += pad(b.length);
  };
  u32(MAGIC);
  u32(FAST_FORM_VERSION);
  u32(headerBytes.length);
  bytes(headerBytes);
  u32(n);
  bytes(asBytes(ff.bpe.ids));
  bytes(asBytes(ff.bpe.lens));
  u32(blob.length);
  bytes(blob);
  u32(ff.bpe.merges.length / 3);
  bytes(asBytes(ff.bpe.merges));
  out.set(new Uint8Array(await crypto.subtle.digest("SHA-256", out.subarray(0, size))), size);
  return out;
}

/** Reads fast-form bytes; undefined (a cache miss) unless they are intact, of this version
 *  and of the bundle `sha256`. */
export async function decodeFastForm(data: Uint8Array, sha256: string): Promise<FastForm | undefined> {
  try {
    if (data.length < 44) return undefined;
    if (data.byteOffset % 4 !== 0) data = data.slice(); // typed views need alignment
    const size = data.length - 32;
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data.subarray(0, size)));
    if (!digest.every((b, i) => b === data[size + i])) return undefined;
    const view = new DataView(data.buffer, data.byteOffset, size);
    let at = 0;
    const u32 = () => {
      const v = view.getUint32(at, true);
      at += 4;
      return v;
    };
    if (u32() !== MAGIC || u32() !== FAST_FORM_VERSION) return undefined;
    const headerLen = u32();
    const header = JSON.parse(new TextDecoder().decode(data.subarray(at, at + headerLen))) as Header;
    at += pad(headerLen);
    if (header.version !== FAST_FORM_VERSION || header.sha256 !== sha256) return undefined;
    const n = u32();
    const ids = new Uint32Array(data.buffer, data.byteOffset + at, n);
    at += 4 * n;
    const lens = new Uint32Array(data.buffer, data.byteOffset + at, n);
    at += 4 * n;
    const blobLen = u32();
    const blob = await decodeUtf8(data.subarray(at, at + blobLen));
    if (blob === undefined) return undefined;
    at += pad(blobLen);
    const m = u32();
    const merges = new Uint32Array(data.buffer, data.byteOffset + at, 3 * m);
    let units = 0;
    for (let i = 0; i < n; i++) units += lens[i]!;
    if (units !== blob.length) return undefined;
    return { sha256, files: new Map(Object.entries(header.files)), tokenizerJson: header.tokenizerJson, bpe: { blob, lens, ids, merges } };
  } catch {
    return undefined;
  }
}

const pad = (n: number) => (n + 3) & ~3;
const asBytes = (a: Uint32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
