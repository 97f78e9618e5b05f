// A reader for the Python that pythonic tool calls are written in: a list of calls with
// keyword arguments whose values are literals (str, int, float, True/False/None, lists,
// tuples, dicts; a bare name reads as its string, as smg's pythonic.rs does). Each value
// becomes JSON text. Anything else makes the block not a call list.
import type { ParsedCall } from "./types.js";

class Reader {
  i = 0;
  constructor(readonly s: string) {}
  ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }
  eat(c: string): boolean {
    this.ws();
    if (this.s[this.i] !== c) return false;
    this.i++;
    return true;
  }
  peek(): string | undefined {
    this.ws();
    return this.s[this.i];
  }
  ident(): string | undefined {
    this.ws();
    const m = /[A-Za-z_][A-Za-z0-9_]*/y;
    m.lastIndex = this.i;
    const hit = m.exec(this.s);
    if (!hit) return undefined;
    this.i += hit[0].length;
    return hit[0];
  }
}

const SIMPLE_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0", a: "\x07", b: "\b", f: "\f", v: "\v", "\n": "" };

function readString(r: Reader): string | undefined {
  const q = r.s[r.i]!;
  let out = "";
  let j = r.i + 1;
  while (j < r.s.length) {
    const c = r.s[j]!;
    if (c === q) {
      r.i = j + 1;
      return JSON.stringify(out);
    }
    if (c === "\n") return undefined;
    if (c !== "\\") {
      out += c;
      j++;
      continue;
    }
    const e = r.s[j + 1];
    if (e === undefined) return undefined;
    const hexLen = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    if (hexLen) {
      const hex = r.s.slice(j + 2, j + 2 + hexLen);
      if (!new RegExp(`^[0-9a-fA-F]{${hexLen}}$`).test(hex)) return undefined;
      out += String.fromCodePoint(parseInt(hex, 16));
      j += 2 + hexLen;
    } else {
      out += SIMPLE_ESCAPES[e] ?? "\\" + e; // Python keeps an unknown escape as written
      j += 2;
    }
  }
  return undefined;
}

function readNumber(r: Reader, sign: string): string | undefined {
  const m = /(\d[\d_]*)?(\.\d*)?([eE][+-]?\d+)?/y;
  m.lastIndex = r.i;
  const hit = m.exec(r.s);
  if (!hit || hit[0] === "" || hit[0] === ".") return undefined;
  r.i += hit[0].length;
  const lit = hit[0].replace(/_/g, "");
  if (!hit[2] && !hit[3]) return sign + (lit.replace(/^0+(?=\d)/, "") || "0");
  const n = Number(sign + lit);
  return Number.isFinite(n) ? JSON.stringify(n) : undefined;
}

function readSequence(r: Reader, close: string, item: () => string | undefined): string[] | undefined {
  const out: string[] = [];
  while (!r.eat(close)) {
    const v = item();
    if (v === undefined) return undefined;
    out.push(v);
    if (!r.eat(",")) return r.eat(close) ? out : undefined;
  }
  return out;
}

function readValue(r: Reader): string | undefined {
  const c = r.peek();
  if (c === undefined) return undefined;
  if (c === "'" || c === '"') return readString(r);
  if (c === "-" || c === "+") {
    r.i++;
    r.ws();
    return readNumber(r, c === "-" ? "-" : "");
  }
  if (/[\d.]/.test(c)) return readNumber(r, "");
  if (c === "[" || c === "(") {
    r.i++;
    const items = readSequence(r, c === "[" ? "]" : ")", () => readValue(r));
    return items && `[${items.join(",")}]`;
  }
  if (c === "{") {
    r.i++;
    const items = readSequence(r, "}", () => {
      const k = readValue(r);
      if (k === undefined || !r.eat(":")) return undefined;
      const v = readValue(r);
      const key = k.startsWith('"') ? k : JSON.stringify(k);
      return v === undefined || k.startsWith("[") || k.startsWith("{") ? undefined : `${key}:${v}`;
    });
    return items && `{${items.join(",")}}`;
  }
  const name = r.ident();
  if (name === "True") return "true";
  if (name === "False") return "false";
  if (name === "None") return "null";
  return name === undefined ? undefined : JSON.stringify(name);
}

function readCall(r: Reader): ParsedCall | undefined {
  const name = r.ident();
  if (name === undefined || !r.eat("(")) return undefined;
  const args = readSequence(r, ")", () => {
    const key = r.ident();
    if (key === undefined || !r.eat("=")) return undefined; // positional arguments: not a tool call
    const v = readValue(r);
    return v === undefined ? undefined : `${JSON.stringify(key)}:${v}`;
  });
  return args && { name, arguments: `{${args.join(",")}}` };
}

/** The calls of `[f(a=1), g(b="x")]` (the whole text), or undefined when it is not that. */
export function parsePythonCallList(text: string): ParsedCall[] | undefined {
  const r = new Reader(text);
  if (!r.eat("[")) return undefined;
  const calls: ParsedCall[] = [];
  do {
    const call = readCall(r);
    if (!call) return undefined;
    calls.push(call);
  } while (r.eat(","));
  if (!r.eat("]")) return undefined;
  r.ws();
  return r.i === text.length ? calls : undefined;
}
