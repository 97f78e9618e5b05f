// A BPE model of @huggingface/tokenizers built from id tables (fast-form.ts) instead of its
// own constructor, which spends most of a cold load on a Map of the vocabulary and a Map keyed
// by JSON.stringify of each of ~150k merges. The model is constructed with an empty vocabulary
// and no merges, then given a vocabulary looked up in place (vocab-index.ts), an id -> token
// array filled on access, and a merge lookup by id pair (IdMergeTable), or, for a tokenizer
// just read from a ZIP, by the pair's text until the merges are resolved to ids
// (text-merges.ts). Its `bpe` loop is unchanged: the same pairs get the same ranks, so the
// same ids (fast-form.ts refuses models where that would not hold; the fast-form suite checks
// it against the library's own path).
import { IdMergeTable, type MergeLookup } from "./bpe-merge.js";
import type { LazyMerges } from "./text-merges.js";
import { VocabIndex } from "./vocab-index.js";

/** The vocabulary as fast-form.ts keeps it. */
export interface BpeVocab {
  blob: string;
  lens: Uint32Array;
  ids: Uint32Array;
}

/** The merges: id triples in rank order (with their table when already built), or merges
 *  still to be resolved. */
export type BpeMerges = { merges: Uint32Array; table?: IdMergeTable | undefined } | { lazy: LazyMerges };

interface QueueNode {
  token: string;
  bias: number;
  score?: number;
  next: QueueNode | null;
}

/** The library's BPE model fields this touches. */
export interface LibBpeModel {
  tokens_to_ids: Map<string, number>;
  vocab: string[];
  unk_token?: string | null;
  unk_token_id?: number;
  add_node(queue: { push(node: QueueNode): void }, node: QueueNode): void;
}

/** Installs the tables into a model the library built with an empty vocabulary; `added`
 *  are the tokenizer's added tokens, overlaid as the library's Tokenizer does. Returns what
 *  EncodeSteps needs: the id merge table (built on first use; null when the merges cannot be
 *  resolved to ids) and the longest model token. */
export function installBpe(model: LibBpeModel, vocab: BpeVocab, merges: BpeMerges, added: readonly { content: string; id: number }[]): { table: () => MergeLookup | null; longestToken: number } {
  const index = new VocabIndex(vocab.blob, vocab.lens, vocab.ids);
  // The library reads unk_token_id before it overlays the added tokens.
  const unk = index.get(model.unk_token as string);
  const byId = vocabById(index, vocab.ids);
  const addedText = new Set<string>();
  for (const a of added) {
    index.set(a.content, a.id);
    byId[a.id] = a.content;
    addedText.add(a.content);
  }
  model.tokens_to_ids = index as unknown as Map<string, number>;
  model.vocab = byId;
  model.unk_token_id = unk;
  const lazy = "lazy" in merges ? merges.lazy : undefined;
  const ready = "lazy" in merges ? undefined : merges;
  let table: IdMergeTable | undefined;
  // Built on first use (or given with the fast form); a lazy one's once its merges resolved.
  const idTable = (): IdMergeTable | undefined => (table ??= ready ? (ready.table ?? new IdMergeTable(ready.merges)) : lazy?.resolved?.table);
  model.add_node = (queue, node) => {
    if (!node.next) return;
    let rank: number;
    const t = idTable();
    if (t) {
      const left = index.get(node.token);
      const right = index.get(node.next.token);
      if (left === undefined || right === undefined) return;
      rank = t.rank(left, right);
    } else rank = lazy!.text!.rank(node.token, node.next.token);
    if (rank >= 0) {
      node.score = rank + node.bias;
      queue.push(node);
    }
  };
  // A long run (WordMerge) needs the id table: resolved now if the background work has not.
  const tableOf = () => {
    lazy?.resolveNow();
    return idTable() ?? null;
  };
  // EncodeSteps' bound: the longest model token that is not an added token.
  let longestToken = 0;
  for (let e = 0; e < vocab.lens.length; e++) if (vocab.lens[e]! > longestToken && !addedText.has(index.text(e))) longestToken = vocab.lens[e]!;
  return { table: tableOf, longestToken };
}

/** id -> token text, sliced from the blob on first access (decode reads a few ids). */
function vocabById(index: VocabIndex, ids: Uint32Array): string[] {
  let maxId = -1;
  for (let e = 0; e < ids.length; e++) if (ids[e]! > maxId) maxId = ids[e]!;
  const entryOf = new Int32Array(maxId + 1).fill(-1);
  for (let e = 0; e < ids.length; e++) entryOf[ids[e]!] = e;
  const target: string[] = [];
  target.length = maxId + 1;
  return new Proxy(target, {
    get(t, p, receiver) {
      if (typeof p === "string") {
        const c = p.charCodeAt(0);
        if (c >= 48 && c <= 57) {
          const i = Number(p);
          let v = t[i];
          if (v === undefined && i < entryOf.length && entryOf[i]! >= 0) v = t[i] = index.text(entryOf[i]!);
          return v;
        }
      }
      return Reflect.get(t, p, receiver) as unknown;
    },
  });
}
