// The sim's "model": a pure, deterministic tokenizer and sampler. Exported so tests (here and
// in the gateway's suites) can predict an engine's exact output for a given prompt and seed.

export const EOS_TOKEN_ID = 2;
const MIN_ID = 100;
const MAX_ID = 50_000; // exclusive; vocab_size reported by GetModelInfo

// 256 short words: detokenize maps an id onto this list, so output text is readable and stable.
const VOCAB: readonly string[] = (
  "alpha beta gamma delta omega sigma kappa lambda theta zeta eta iota rho tau phi chi psi " +
  "red blue green gold gray pink teal navy plum rose jade ruby onyx opal amber ivory " +
  "sun moon star sky sea bay hill lake pond reef dune glen vale cove peak rock " +
  "oak elm ash fir pine yew birch cedar maple palm fern moss reed vine sage mint " +
  "cat dog fox owl bee ant elk yak emu gnu ram cow pig hen eel cod " +
  "one two three four five six seven eight nine ten zero half full many few some " +
  "run walk jump swim fly sing read write draw cook bake grow dig sail row ride " +
  "big small tall short wide deep high low fast slow warm cold soft hard dry wet " +
  "day night dawn dusk noon week year hour time age era now soon late early then " +
  "up down in out on off over under near far left right top end side back " +
  "book page word line note song poem tale myth lore code data file node link path " +
  "home room door wall roof yard road lane city town farm mill shop inn port gate " +
  "bread milk rice corn bean pear jam fig lime kiwi date nut salt soup tea pie " +
  "rain snow wind fog mist hail storm cloud frost ice fire smoke ember spark flame " +
  "iron tin lead zinc gem coin ring bell drum horn harp lute flute pipe bow arrow " +
  "king queen duke earl lord lady knight serf monk nun bard seer poet chef smith scout"
)
  .split(" ")
  .filter((w) => w.length > 0);

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a (32-bit) over the UTF-16 code units of a string. */
export function fnv1a(text: string, seed = FNV_OFFSET): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME) >>> 0;
  }
  return h >>> 0;
}

/** FNV-1a folding a list of 32-bit integers (as 4 little-endian bytes each). */
function fnvInts(values: readonly number[], seed = FNV_OFFSET): number {
  let h = seed >>> 0;
  for (const v of values) {
    for (let shift = 0; shift < 32; shift += 8) {
      h ^= (v >>> shift) & 0xff;
      h = Math.imul(h, FNV_PRIME) >>> 0;
    }
  }
  return h >>> 0;
}

/** Whitespace-split words, each mapped to a stable id in [100, 50000). */
export function tokenize(text: string): number[] {
  return text
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map((w) => MIN_ID + (fnv1a(w) % (MAX_ID - MIN_ID)));
}

/** One vocabulary word per id, each with a leading space: [5, 6] -> " xxx yyy". */
export function detokenize(ids: readonly number[]): string {
  let out = "";
  for (const id of ids) out += " " + VOCAB[id % VOCAB.length];
  return out;
}

/** Hash of a prompt, the root of everything sampled for it. */
export function promptHash(promptIds: readonly number[]): number {
  return fnvInts(promptIds);
}

/** Token at output position `pos` (0-based) of sample `index`. Never EOS or below 100. */
export function tokenAt(hash: number, seed: number | undefined, index: number, pos: number): number {
  const h = fnvInts([hash, (seed ?? 0) | 0, index, pos]);
  return MIN_ID + (h % (MAX_ID - MIN_ID));
}

/** The first `count` output tokens of sample `index` for this prompt and seed. */
export function outputTokenIds(
  promptIds: readonly number[],
  seed: number | undefined,
  index: number,
  count: number,
): number[] {
  const hash = promptHash(promptIds);
  const out: number[] = [];
  for (let pos = 0; pos < count; pos++) out.push(tokenAt(hash, seed, index, pos));
  return out;
}

/** How many tokens sample `index` emits before EOS when ignore_eos is off: 8..32. */
export function naturalLength(promptIds: readonly number[], seed: number | undefined, index: number): number {
  return naturalLengthFromHash(promptHash(promptIds), seed, index);
}

export function naturalLengthFromHash(hash: number, seed: number | undefined, index: number): number {
  return 8 + (fnvInts([hash, (seed ?? 0) | 0, index, 0x454f53]) % 25);
}
