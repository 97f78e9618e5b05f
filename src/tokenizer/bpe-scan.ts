// tokenizer.json read without JSON.parse of its vocabulary and merges (issue 30): they are
// almost all of the file (10.5 of Qwen3's 10.6 MB) and, parsed, ~150k object keys and ~150k
// two-string arrays that the fast form (fast-form.ts) only turns back into tables. Here a
// scanner walks the document's structure, reads `model.vocab` straight into the fast form's
// vocabulary (one joined string, lengths, ids) and `model.merges` into two string lists, and
// JSON.parse reads the rest: the document with those two values replaced by {} and [] (a few
// KB), so every other field means exactly what JSON.parse says. Anything the scanner does not
// expect (a repeated key on the path, a value of another shape) is `undefined`: the caller
// parses the whole file instead.

/** The model's vocabulary as fast-form.ts stores it: entry e is keys[e] with id ids[e]. */
export interface ScannedBpe {
  /** tokenizer.json with model.vocab = {} and model.merges = []. */
  rest: Record<string, unknown>;
  keys: string[];
  ids: Uint32Array;
  /** Merge `rank` is (lefts[rank], rights[rank]), read as the library reads each form. */
  lefts: string[];
  rights: string[];
}

class Miss extends Error {}

/** The document's model vocabulary and merges, or undefined (then JSON.parse it whole). */
export function scanBpeTokenizerJson(text: string): ScannedBpe | undefined {
  try {
    return new Scanner(text).document();
  } catch (err) {
    if (err instanceof Miss || err instanceof SyntaxError) return undefined;
    throw err;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

class Scanner {
  private at = 0;
  /** Next backslash at or after `at` (or the text's length): strings before it have no escape. */
  private nextEscape = -1;

  constructor(private readonly s: string) {}

  document(): ScannedBpe {
    let vocab: [number, number, string[], Uint32Array] | undefined;
    let merges: [number, number, string[], string[]] | undefined;
    let sawModel = false;
    this.object((key) => {
      if (key !== "model") return this.skipValue();
      if (sawModel) throw new Miss();
      sawModel = true;
      this.object((mkey) => {
        if (mkey === "vocab") {
          if (vocab) throw new Miss();
          const from = this.at;
          const [keys, ids] = this.vocab();
          vocab = [from, this.at, keys, ids];
        } else if (mkey === "merges") {
          if (merges) throw new Miss();
          const from = this.at;
          const [lefts, rights] = this.merges();
          merges = [from, this.at, lefts, rights];
        } else this.skipValue();
      });
    });
    this.ws();
    if (this.at !== this.s.length || !vocab || !merges) throw new Miss();
    const [v0, v1, keys, ids] = vocab;
    const [m0, m1, lefts, rights] = merges;
    const cut = v0 < m0 ? [[v0, v1, "{}"], [m0, m1, "[]"]] as const : [[m0, m1, "[]"], [v0, v1, "{}"]] as const;
    const restText = this.s.slice(0, cut[0][0]) + cut[0][2] + this.s.slice(cut[0][1], cut[1][0]) + cut[1][2] + this.s.slice(cut[1][1]);
    const rest = JSON.parse(restText) as unknown;
    if (typeof rest !== "object" || rest === null || Array.isArray(rest)) throw new Miss();
    return { rest: rest as Record<string, unknown>, keys, ids, lefts, rights };
  }

  private ws(): void {
    const s = this.s;
    let c = s.charCodeAt(this.at);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = s.charCodeAt(++this.at);
  }

  private expect(code: number): void {
    this.ws();
    if (this.s.charCodeAt(this.at) !== code) throw new Miss();
    this.at++;
  }

  /** `{ "key": value, ... }`, `member` reading each value. */
  private object(member: (key: string) => void): void {
    this.expect(0x7b);
    this.ws();
    if (this.s.charCodeAt(this.at) === 0x7d) return void this.at++;
    for (;;) {
      const key = this.string();
      this.expect(0x3a);
      this.ws();
      member(key);
      this.ws();
      const c = this.s.charCodeAt(this.at++);
      if (c === 0x7d) return;
      if (c !== 0x2c) throw new Miss();
      this.ws();
    }
  }

  /** A JSON string at `at` (after whitespace), unescaped. */
  private string(): string {
    const s = this.s;
    if (s.charCodeAt(this.at) !== QUOTE) throw new Miss();
    const from = this.at + 1;
    const end = s.indexOf('"', from);
    if (end < 0) throw new Miss();
    if (this.nextEscape < from) {
      this.nextEscape = s.indexOf("\\", from);
      if (this.nextEscape < 0) this.nextEscape = s.length;
    }
    if (this.nextEscape > end) {
      this.at = end + 1;
      return s.slice(from, end);
    }
    // An escape: find the real end (a quote after an even run of backslashes), then JSON.parse.
    let i = from;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === BACKSLASH) i += 2;
      else if (c === QUOTE) break;
      else if (Number.isNaN(c)) throw new Miss();
      else i++;
    }
    this.at = i + 1;
    return JSON.parse(s.slice(from - 1, i + 1)) as string;
  }

  /** `{ "token": id, ... }` with non-negative integer ids. */
  private vocab(): [string[], Uint32Array] {
    const keys: string[] = [];
    let ids = new Uint32Array(1 << 16);
    const s = this.s;
    this.object((key) => {
      let id = 0;
      let c = s.charCodeAt(this.at);
      if (c < 0x30 || c > 0x39) throw new Miss();
      const start = this.at;
      do {
        id = id * 10 + (c - 0x30);
        c = s.charCodeAt(++this.at);
      } while (c >= 0x30 && c <= 0x39);
      // JSON has no leading zeros; the fast form's ids are below 2^31.
      if ((s.charCodeAt(start) === 0x30 && this.at - start > 1) || id >= 2 ** 31 || c === 0x2e || c === 0x65 || c === 0x45) throw new Miss();
      if (keys.length === ids.length) {
        const grown = new Uint32Array(ids.length * 2);
        grown.set(ids);
        ids = grown;
      }
      ids[keys.length] = id;
      keys.push(key);
    });
    return [keys, ids.slice(0, keys.length)];
  }

  /** `[["a", "b"], ...]` or `["a b", ...]` (split as the library does: split(" ", 2)). */
  private merges(): [string[], string[]] {
    const lefts: string[] = [];
    const rights: string[] = [];
    this.expect(0x5b);
    this.ws();
    if (this.s.charCodeAt(this.at) === 0x5d) {
      this.at++;
      return [lefts, rights];
    }
    for (;;) {
      if (this.s.charCodeAt(this.at) === 0x5b) {
        this.at++;
        this.ws();
        lefts.push(this.string());
        this.expect(0x2c);
        this.ws();
        rights.push(this.string());
        this.expect(0x5d);
      } else {
        const [a, b] = this.string().split(" ", 2);
        if (b === undefined) throw new Miss();
        lefts.push(a!);
        rights.push(b);
      }
      this.ws();
      const c = this.s.charCodeAt(this.at++);
      if (c === 0x5d) return [lefts, rights];
      if (c !== 0x2c) throw new Miss();
      this.ws();
    }
  }

  /** Any JSON value, unread (JSON.parse of the rest checks its syntax). */
  private skipValue(): void {
    const s = this.s;
    let depth = 0;
    for (;;) {
      const c = s.charCodeAt(this.at);
      if (Number.isNaN(c)) throw new Miss();
      if (c === QUOTE) {
        this.string();
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
