// tokenizer.json read without decoding it to text and without JSON.parse of its vocabulary and
// merges (issue 30): they are almost all of the file (Qwen3: 11.4 MB of UTF-8, of which 4 MB is
// the vocabulary and 7.4 MB the merges, mostly indentation). A scanner walks the document's
// structure on its UTF-8 bytes (JSON's structural characters are ASCII, and no byte of a
// multi-byte sequence is), copies `model.vocab`'s tokens into one UTF-8 blob with their ids and
// UTF-16 lengths, and `model.merges`' strings into one byte pool (both the `["a", "b"]` and the
// old `"a b"` form), checking that every byte it copies is well-formed UTF-8. Only the rest is
// decoded and JSON.parsed: the document with those two values replaced by {} and [] (a few KB),
// so every other field means exactly what JSON.parse says. Decoding the whole file was the
// largest part of a cold load from the engine (~150 ms in workerd, ~70-100 ms in Node).
// Anything the scanner does not expect (a repeated key on the path, a value of another shape,
// a token that is not well-formed, a byte that is not UTF-8) is `undefined`: the caller decodes
// and parses the whole file instead.

/** The model's vocabulary and merges as the scanner found them. */
export interface ScannedBpe {
  /** tokenizer.json with model.vocab = {} and model.merges = []. */
  rest: Record<string, unknown>;
  /** Entry e is blob[sum(byteLens[..e]) ..][byteLens[e]] (UTF-8), with id ids[e] and
   *  lens[e] UTF-16 units. */
  blob: Uint8Array;
  byteLens: Uint32Array;
  lens: Uint32Array;
  ids: Uint32Array;
  merges: MergeTexts;
}

/** The merges' strings, UTF-8, one after the other: merge `rank` is left
 *  bytes[starts[2 rank] .. starts[2 rank + 1]] and right bytes[.. starts[2 rank + 2]]. */
export interface MergeTexts {
  count: number;
  bytes: Uint8Array;
  starts: Uint32Array;
}

class Miss extends Error {}

/** The document's model vocabulary and merges, or undefined (then parse it whole). */
export function scanBpeTokenizerJson(bytes: Uint8Array): ScannedBpe | undefined {
  try {
    return new Scanner(bytes).document();
  } catch (err) {
    if (err instanceof Miss || err instanceof SyntaxError || err instanceof TypeError) return undefined;
    throw err;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SPACE = 0x20;

/** Per lead byte of a UTF-8 sequence: the continuation bytes that follow (-1: not a lead byte,
 *  or a control character, which a JSON string cannot hold raw), and the range the first of
 *  them must fall in (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF). */
const NEED = new Int8Array(256).fill(-1);
const FIRST_LO = new Uint8Array(256).fill(0x80);
const FIRST_HI = new Uint8Array(256).fill(0xbf);
NEED.fill(0, 0x20, 0x80);
NEED.fill(1, 0xc2, 0xe0);
NEED.fill(2, 0xe0, 0xf0);
NEED.fill(3, 0xf0, 0xf5);
FIRST_LO[0xe0] = 0xa0;
FIRST_HI[0xed] = 0x9f;
FIRST_LO[0xf0] = 0x90;
FIRST_HI[0xf4] = 0x8f;

/** UTF-16 units of the content copyContent last copied. */
let copiedUnits = 0;

/** Copies a string's raw content, from b[at] (just past its opening quote), into out[p..] byte
 *  for byte, refusing a control character or a byte that is not well-formed UTF-8, up to the
 *  closing quote: returns the quote's index (so the content is `quote - at` bytes, its UTF-16
 *  length in copiedUnits), or -1 at a backslash (an escape, for the caller's general path).
 *  The one UTF-8 check of every fast path: a loop per string, not a call per byte. */
function copyContent(b: Uint8Array, at: number, out: Uint8Array, p: number): number {
  let units = 0;
  let need = 0;
  let lo = 0x80;
  let hi = 0xbf;
  for (; ; at++) {
    const c = b[at];
    if (c === undefined) throw new Miss();
    if (need === 0) {
      if (c === QUOTE) break;
      if (c === BACKSLASH) return -1;
      need = NEED[c]!;
      if (need < 0) throw new Miss();
      lo = FIRST_LO[c]!;
      hi = FIRST_HI[c]!;
      units += need === 3 ? 2 : 1;
    } else if (c < lo || c > hi) throw new Miss();
    else {
      lo = 0x80;
      hi = 0xbf;
      need--;
    }
    out[p++] = c;
  }
  copiedUnits = units;
  return at;
}

/** A growable typed array: its first `length` elements are in use. */
class Grown<T extends Uint8Array | Uint32Array> {
  length = 0;
  constructor(public a: T) {}
  /** The array, with room for `n` more (a copy at least twice the size when full). */
  reserve(n: number): T {
    if (this.length + n <= this.a.length) return this.a;
    const grown = new (this.a.constructor as new (size: number) => T)(Math.max(this.a.length * 2, this.length + n));
    grown.set(this.a.subarray(0, this.length));
    return (this.a = grown);
  }
  push(v: number): void {
    if (this.length === this.a.length) this.reserve(1);
    this.a[this.length++] = v;
  }
  done(): T {
    return this.a.subarray(0, this.length) as T;
  }
}

type Pool = Grown<Uint8Array>;
type U32s = Grown<Uint32Array>;
const pool = (size: number): Pool => new Grown(new Uint8Array(Math.max(64, size)));
const u32s = (size: number): U32s => new Grown(new Uint32Array(Math.max(16, size)));

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8 = new TextEncoder();

class Scanner {
  private at = 0;
  /** Next backslash at or after `at` (or the length): strings before it have no escape. */
  private nextEscape = -1;

  constructor(private readonly b: Uint8Array) {}

  document(): ScannedBpe {
    let vocab: [number, number] | undefined;
    let merges: [number, number] | undefined;
    let sawModel = false;
    const out = { blob: pool(this.b.length >> 2), byteLens: u32s(1 << 16), lens: u32s(1 << 16), ids: u32s(1 << 16), merges: pool(0), starts: u32s(1 << 19) };
    this.object((key) => {
      if (key !== "model") return this.skipValue();
      if (sawModel) throw new Miss();
      sawModel = true;
      this.object((mkey) => {
        if (mkey === "vocab") {
          if (vocab) throw new Miss();
          const from = this.at;
          this.vocab(out);
          vocab = [from, this.at];
        } else if (mkey === "merges") {
          if (merges) throw new Miss();
          const from = this.at;
          this.merges(out.merges, out.starts);
          merges = [from, this.at];
        } else this.skipValue();
      });
    });
    this.ws();
    if (this.at !== this.b.length || !vocab || !merges) throw new Miss();
    const [v0, v1] = vocab;
    const [m0, m1] = merges;
    const cut = v0 < m0 ? ([[v0, v1, "{}"], [m0, m1, "[]"]] as const) : ([[m0, m1, "[]"], [v0, v1, "{}"]] as const);
    const piece = (from: number, to: number) => strict.decode(this.b.subarray(from, to));
    const restText = piece(0, cut[0][0]) + cut[0][2] + piece(cut[0][1], cut[1][0]) + cut[1][2] + piece(cut[1][1], this.b.length);
    const rest = JSON.parse(restText) as unknown;
    if (typeof rest !== "object" || rest === null || Array.isArray(rest)) throw new Miss();
    const starts = out.starts;
    const count = starts.length >> 1;
    starts.push(out.merges.length);
    return {
      rest: rest as Record<string, unknown>,
      blob: out.blob.done(),
      byteLens: out.byteLens.done(),
      lens: out.lens.done(),
      ids: out.ids.done(),
      // Copied out: the pool was sized for the whole merges list, whitespace included.
      merges: { count, bytes: out.merges.done().slice(), starts: starts.done() },
    };
  }

  private ws(): void {
    const b = this.b;
    let at = this.at;
    let c = b[at];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
    this.at = at;
  }

  private expect(code: number): void {
    this.ws();
    if (this.b[this.at] !== code) throw new Miss();
    this.at++;
  }

  /** `{ "key": value, ... }`, `member` reading each value. */
  private object(member: (key: string) => void): void {
    this.expect(0x7b);
    this.ws();
    if (this.b[this.at] === 0x7d) return void this.at++;
    for (;;) {
      const key = this.key();
      this.expect(0x3a);
      this.ws();
      member(key);
      this.ws();
      const c = this.b[this.at++];
      if (c === 0x7d) return;
      if (c !== 0x2c) throw new Miss();
      this.ws();
    }
  }

  /** The last string's content span and whether it has an escape (stringSpan). */
  private from = 0;
  private end = 0;
  private escaped = false;

  /** The string at `at` (a quote): its content is [from, end), with an escape or not; `at`
   *  moves past its closing quote. */
  private stringSpan(): void {
    const b = this.b;
    if (b[this.at] !== QUOTE) throw new Miss();
    const from = this.at + 1;
    const end = b.indexOf(QUOTE, from);
    if (end < 0) throw new Miss();
    if (this.nextEscape < from) {
      this.nextEscape = b.indexOf(BACKSLASH, from);
      if (this.nextEscape < 0) this.nextEscape = b.length;
    }
    this.from = from;
    if (this.nextEscape > end) {
      this.at = end + 1;
      this.end = end;
      this.escaped = false;
      return;
    }
    // An escape: the real end is a quote after an even run of backslashes.
    let i = from;
    for (;;) {
      const c = b[i];
      if (c === BACKSLASH) i += 2;
      else if (c === QUOTE) break;
      else if (c === undefined) throw new Miss();
      else i++;
    }
    this.at = i + 1;
    this.end = i;
    this.escaped = true;
  }

  /** The string at `at`, as JSON.parse reads it (a key on the path, or an escaped token). */
  private key(): string {
    this.stringSpan();
    const { from, end, escaped } = this;
    const raw = strict.decode(this.b.subarray(from, end));
    return escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  /** An escaped token or merge string: unescaped, and refused when not well-formed UTF-16
   *  (a lone surrogate has no UTF-8, so the tables could not hold it). */
  private unescaped(from: number, end: number): string {
    const s = JSON.parse(`"${strict.decode(this.b.subarray(from, end))}"`) as string;
    if (/\p{Cs}/u.test(s)) throw new Miss();
    return s;
  }

  /** `{ "token": id, ... }` with non-negative integer ids. */
  private vocab(out: { blob: Pool; byteLens: U32s; lens: U32s; ids: U32s }): void {
    const b = this.b;
    this.object0(() => this.vocabFast(out), (from, end, escaped) => {
      if (escaped) {
        const s = this.unescaped(from, end);
        const enc = utf8.encode(s);
        out.blob.reserve(enc.length).set(enc, out.blob.length);
        out.blob.length += enc.length;
        out.byteLens.push(enc.length);
        out.lens.push(s.length);
      } else {
        out.byteLens.push(end - from);
        out.lens.push(copyUtf8(b, from, end, out.blob));
      }
      this.expect(0x3a);
      this.ws();
      let id = 0;
      let c = b[this.at]!;
      if (!(c >= 0x30 && c <= 0x39)) throw new Miss();
      const start = this.at;
      do {
        id = id * 10 + (c - 0x30);
        c = b[++this.at]!;
      } while (c >= 0x30 && c <= 0x39);
      // JSON has no leading zeros; the fast form's ids are below 2^31.
      if ((b[start] === 0x30 && this.at - start > 1) || id >= 2 ** 31 || c === 0x2e || c === 0x65 || c === 0x45) throw new Miss();
      out.ids.push(id);
    });
  }

  /** `"token": id, ...` from `at` in one loop, as pairsFast does for the merges: up to the
   *  closing brace (then true) or an entry it leaves to the general path (an escape: then
   *  false, with `at` at that entry). Same checks as vocab. */
  private vocabFast(out: { blob: Pool; byteLens: U32s; lens: U32s; ids: U32s }): boolean {
    const b = this.b;
    const blob = out.blob.reserve(b.length - this.at);
    let at = this.at;
    let p = out.blob.length;
    for (;;) {
      if (b[at] !== QUOTE) return this.stop(at, p, out);
      const quote = copyContent(b, at + 1, blob, p);
      // An escape: the general path takes this entry.
      if (quote < 0) return this.stop(at, p, out);
      const from = p;
      const units = copiedUnits;
      p += quote - at - 1;
      at = quote;
      let c = b[++at]!;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at]!;
      if (c !== 0x3a) throw new Miss();
      c = b[++at]!;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at]!;
      if (!(c >= 0x30 && c <= 0x39)) throw new Miss();
      const start = at;
      let id = 0;
      do {
        id = id * 10 + (c - 0x30);
        c = b[++at]!;
      } while (c >= 0x30 && c <= 0x39);
      // JSON has no leading zeros; the fast form's ids are below 2^31.
      if ((b[start] === 0x30 && at - start > 1) || id >= 2 ** 31 || c === 0x2e || c === 0x65 || c === 0x45) throw new Miss();
      out.byteLens.push(p - from);
      out.lens.push(units);
      out.ids.push(id);
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at]!;
      at++;
      if (c === 0x7d) {
        this.at = at;
        out.blob.length = p;
        return true;
      }
      if (c !== 0x2c) throw new Miss();
      c = b[at]!;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at]!;
    }
  }

  private stop(at: number, p: number, out: { blob: Pool }): false {
    this.at = at;
    out.blob.length = p;
    return false;
  }

  /** An object whose keys `member` reads from their spans (the value after it too); `fast`
   *  may read entries first. */
  private object0(fast: () => boolean, member: (from: number, end: number, escaped: boolean) => void): void {
    this.expect(0x7b);
    this.ws();
    if (this.b[this.at] === 0x7d) return void this.at++;
    for (;;) {
      if (fast()) return;
      this.stringSpan();
      member(this.from, this.end, this.escaped);
      this.ws();
      const c = this.b[this.at++];
      if (c === 0x7d) return;
      if (c !== 0x2c) throw new Miss();
      this.ws();
    }
  }

  /** `[["a", "b"], ...]` or `["a b", ...]` (split as the library does: split(" ", 2)). */
  private merges(pool: Pool, starts: U32s): void {
    const b = this.b;
    const str = () => {
      this.stringSpan();
      starts.push(pool.length);
      if (!this.escaped) copyUtf8(b, this.from, this.end, pool);
      else {
        const enc = utf8.encode(this.unescaped(this.from, this.end));
        pool.reserve(enc.length).set(enc, pool.length);
        pool.length += enc.length;
      }
    };
    this.expect(0x5b);
    this.ws();
    if (b[this.at] === 0x5d) return void this.at++;
    // The library reads every merge in the form of the first one; a list that mixes them is
    // left to it.
    const pairs = b[this.at] === 0x5b;
    for (;;) {
      if (pairs && this.pairsFast(pool, starts)) return;
      if ((b[this.at] === 0x5b) !== pairs) throw new Miss();
      if (pairs) {
        this.at++;
        this.ws();
        str();
        this.expect(0x2c);
        this.ws();
        str();
        this.expect(0x5d);
      } else {
        // "a b": the left string up to the first space, the right one up to the next space.
        const left = pool.length;
        str();
        const bytes = pool.a;
        let space = left;
        while (space < pool.length && bytes[space] !== SPACE) space++;
        if (space === pool.length) throw new Miss();
        let second = space + 1;
        while (second < pool.length && bytes[second] !== SPACE) second++;
        bytes.copyWithin(space, space + 1, second);
        pool.length = second - 1;
        starts.push(space);
      }
      this.ws();
      const c = b[this.at++];
      if (c === 0x5d) return;
      if (c !== 0x2c) throw new Miss();
      this.ws();
    }
  }

  /** `["a", "b"], ...` from `at` in one loop (most of the file: a call per string and per
   *  space cost ~2x as much on a cold isolate), up to the list's closing bracket (then true)
   *  or a merge it leaves to the general path (an escape, unusual syntax: then false, with
   *  `at` at that merge). */
  private pairsFast(pool: Pool, starts: U32s): boolean {
    const b = this.b;
    const out = pool.reserve(b.length - this.at);
    let at = this.at;
    let p = pool.length;
    let sa = starts.a;
    let sl = starts.length;
    for (;;) {
      const mergeAt = at;
      const mergeP = p;
      const mergeStarts = sl;
      let ok = b[at] === 0x5b;
      at++;
      for (let k = 0; ok && k < 2; k++) {
        let c = b[at];
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
        if (k === 1) {
          if (c !== 0x2c) {
            ok = false;
            break;
          }
          c = b[++at];
          while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
        }
        if (c !== QUOTE) {
          ok = false;
          break;
        }
        if (sl === sa.length) {
          starts.length = sl;
          starts.push(p);
          sa = starts.a;
          sl = starts.length;
        } else sa[sl++] = p;
        const quote = copyContent(b, at + 1, out, p);
        if (quote < 0) {
          ok = false;
          break;
        }
        p += quote - at - 1;
        at = quote + 1;
      }
      if (ok) {
        let c = b[at];
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
        ok = c === 0x5d;
      }
      if (!ok) {
        this.at = mergeAt;
        pool.length = mergeP;
        starts.length = mergeStarts;
        return false;
      }
      let c = b[++at];
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
      at++;
      if (c === 0x5d) {
        this.at = at;
        pool.length = p;
        starts.length = sl;
        return true;
      }
      if (c !== 0x2c) throw new Miss();
      c = b[at];
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++at];
    }
  }

  /** Any JSON value, unread (JSON.parse of the rest checks its syntax). */
  private skipValue(): void {
    const b = this.b;
    let depth = 0;
    for (;;) {
      const c = b[this.at];
      if (c === undefined) throw new Miss();
      if (c === QUOTE) {
        this.stringSpan();
        if (depth === 0) return;
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) return; // the end of the enclosing value: a scalar ended before it
        depth--;
        if (depth === 0) return void this.at++;
      } else if (depth === 0 && c === 0x2c) return;
      this.at++;
    }
  }
}

/** Copies the string content b[from, end) (no escapes; b[end] its closing quote) into
 *  `pool`, checked as copyContent checks it; returns its length in UTF-16 units. */
function copyUtf8(b: Uint8Array, from: number, end: number, pool: Pool): number {
  if (copyContent(b, from, pool.reserve(end - from), pool.length) !== end) throw new Miss();
  pool.length += end - from;
  return copiedUnits;
}
