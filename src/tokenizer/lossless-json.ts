// JSON as Python's json.loads sees it, for the parts of a chat a template serializes back to
// text (tool schemas, tool-call arguments). JSON.parse turns 1.0 into 1 and 1e-07 into 1e-7 and
// moves integer-like keys ("1", "2") before the others; transformers gets the client's JSON via
// Python, which keeps floats as floats and keys in document order, so a naive path renders a
// different prompt. Here numbers keep their text and objects are Maps (insertion order, all keys).

/** A JSON number with the client's spelling; `value` is its JS reading. */
export class JsonNumber {
  constructor(readonly text: string) {}
  get value(): number {
    return Number(this.text);
  }
  /** Python parses a number with ".", "e" or "E" as float, anything else as int. */
  get isFloat(): boolean {
    return /[.eE]/.test(this.text);
  }
}

export type LosslessJson = null | boolean | string | JsonNumber | LosslessJson[] | Map<string, LosslessJson>;

export class LosslessJsonError extends Error {
  override readonly name = "LosslessJsonError";
}

/** Deepest nesting read (the body is level 0); the OpenAI surface refuses deeper with a 400. */
export const MAX_JSON_DEPTH = 512;

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WS = /[ \t\n\r]*/y;

export function parseLosslessJson(text: string): LosslessJson {
  let at = 0;
  const fail = (what: string): never => {
    throw new LosslessJsonError(`invalid JSON at offset ${at}: ${what}`);
  };
  const ws = () => {
    WS.lastIndex = at;
    WS.exec(text);
    at = WS.lastIndex;
  };
  const str = (): string => {
    // Find the closing quote, then let JSON.parse do the escapes (it is exact for strings).
    const start = at;
    at++;
    for (;;) {
      const c = text.charCodeAt(at);
      if (Number.isNaN(c)) fail("unterminated string");
      if (c === 0x22) break;
      if (c === 0x5c) at++;
      else if (c < 0x20) fail("control character in string");
      at++;
    }
    at++;
    try {
      return JSON.parse(text.slice(start, at)) as string;
    } catch {
      return fail("bad string escape");
    }
  };
  const value = (depth: number): LosslessJson => {
    if (depth > MAX_JSON_DEPTH) fail("nesting too deep");
    ws();
    const c = text[at];
    if (c === "{") {
      at++;
      const map = new Map<string, LosslessJson>();
      ws();
      if (text[at] === "}") {
        at++;
        return map;
      }
      for (;;) {
        ws();
        if (text[at] !== '"') fail("expected a key");
        const key = str();
        ws();
        if (text[at] !== ":") fail("expected ':'");
        at++;
        // Python's dict keeps the first position of a repeated key and its last value; so does Map.set.
        map.set(key, value(depth + 1));
        ws();
        if (text[at] === ",") {
          at++;
          continue;
        }
        if (text[at] === "}") {
          at++;
          return map;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      at++;
      const arr: LosslessJson[] = [];
      ws();
      if (text[at] === "]") {
        at++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[at] === ",") {
          at++;
          continue;
        }
        if (text[at] === "]") {
          at++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = at;
    const m = NUMBER.exec(text);
    if (m) {
      at = NUMBER.lastIndex;
      return new JsonNumber(m[0]);
    }
    return fail("unexpected character");
  };
  const v = value(0);
  ws();
  if (at !== text.length) fail("trailing characters");
  return v;
}

/** The plain JS value (what JSON.parse would give), for validation code that wants one. */
export function toPlain(v: LosslessJson): unknown {
  if (v instanceof JsonNumber) return v.value;
  if (Array.isArray(v)) return v.map(toPlain);
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of v) o[k] = toPlain(x);
    return o;
  }
  return v;
}

/** Python's repr() of a float (what json.dumps and str() print): shortest round-trip digits,
 *  exponent form below 1e-4 and from 1e16 on, always a ".0" or an exponent. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant, expText] = x.toExponential().split("e") as [string, string];
  const exp = Number(expText);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  let out: string;
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    out = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  } else if (exp < 0) {
    out = `0.${"0".repeat(-exp - 1)}${digits}`;
  } else if (digits.length <= exp + 1) {
    out = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
  } else {
    out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  }
  return neg ? `-${out}` : out;
}

/** How Python prints a JSON number after json.loads: int exactly (arbitrary precision), float by repr. */
export function pyNumberRepr(n: JsonNumber): string {
  return n.isFloat ? pyFloatRepr(n.value) : BigInt(n.text).toString();
}
