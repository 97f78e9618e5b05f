// Python's json.dumps over @huggingface/jinja runtime values: transformers replaces Jinja's
// tojson with json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False),
// and the library's own tojson prints floats the JS way (1 for 1.0, 1e-7 for 1e-07) and sorts
// keys by locale. Numbers made from the client's JSON carry `pyRepr` (see chat-template.ts).
import { pyFloatRepr } from "./lossless-json.js";

/** The shape of a jinja runtime value this module reads (duck-typed; the classes are internal). */
export interface RuntimeLike {
  type: string;
  value: unknown;
  pyRepr?: string;
}

export interface PyJsonOptions {
  indent?: number | string | null;
  ensureAscii?: boolean;
  separators?: [string, string] | null;
  sortKeys?: boolean;
}

function pyString(s: string, ensureAscii: boolean): string {
  // JSON.stringify escapes exactly Python's set (\" \\ \b \f \n \r \t, other C0 as \u00xx
  // lower-case); it also escapes lone surrogates, which Python with ensure_ascii=False does not.
  const quoted = JSON.stringify(s);
  if (!ensureAscii) return quoted;
  return quoted.replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

function codePointCompare(a: string, b: string): number {
  // Python sorts str by code point; JS < compares UTF-16 units, which differs only above U+FFFF
  // against U+E000..U+FFFF, so compare code points explicitly.
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function pyJsonDumps(v: RuntimeLike, options: PyJsonOptions = {}): string {
  const ensureAscii = options.ensureAscii ?? false;
  const indentUnit =
    options.indent === null || options.indent === undefined
      ? null
      : typeof options.indent === "number"
        ? " ".repeat(Math.max(0, options.indent))
        : options.indent;
  const [itemSep, keySep] = options.separators ?? (indentUnit !== null ? [",", ": "] : [", ", ": "]);

  const dump = (x: RuntimeLike, depth: number): string => {
    switch (x.type) {
      case "NullValue":
      case "UndefinedValue":
        return "null";
      case "BooleanValue":
        return x.value ? "true" : "false";
      case "IntegerValue":
        return x.pyRepr ?? String(x.value);
      case "FloatValue":
        return x.pyRepr ?? pyFloatRepr(x.value as number);
      case "StringValue":
        return pyString(x.value as string, ensureAscii);
      case "ArrayValue":
      case "TupleValue": {
        const items = (x.value as RuntimeLike[]).map((e) => dump(e, depth + 1));
        return wrap("[", "]", items, depth);
      }
      case "ObjectValue":
      case "KeywordArgumentsValue": {
        let entries = [...(x.value as Map<string, RuntimeLike>).entries()];
        if (options.sortKeys) entries = entries.sort(([a], [b]) => codePointCompare(a, b));
        const items = entries.map(([k, e]) => `${pyString(k, ensureAscii)}${keySep}${dump(e, depth + 1)}`);
        return wrap("{", "}", items, depth);
      }
      default:
        throw new TypeError(`Object of type ${x.type} is not JSON serializable`);
    }
  };

  const wrap = (open: string, close: string, items: string[], depth: number): string => {
    if (items.length === 0) return open + close;
    if (indentUnit === null) return open + items.join(itemSep) + close;
    const inner = "\n" + indentUnit.repeat(depth + 1);
    return open + inner + items.join(itemSep + inner) + "\n" + indentUnit.repeat(depth) + close;
  };

  return dump(v, 0);
}

/** Python's repr() of a str: single quotes unless the text has ' and no ". */
function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === "\\" || ch === quote) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + quote;
}

/** Python's str() of a list or dict ({{ x }} on a container): the repr of its items. Used for
 *  containers built from the request; the library prints them as JSON ("a" and null instead of
 *  'a' and None). Non-printable non-ASCII characters are not escaped as Python would. */
export function pyRepr(v: RuntimeLike): string {
  switch (v.type) {
    case "NullValue":
    case "UndefinedValue":
      return "None";
    case "BooleanValue":
      return v.value ? "True" : "False";
    case "IntegerValue":
      return v.pyRepr ?? String(v.value);
    case "FloatValue":
      return v.pyRepr ?? pyFloatRepr(v.value as number);
    case "StringValue":
      return pyStrRepr(v.value as string);
    case "ArrayValue":
      return "[" + (v.value as RuntimeLike[]).map(pyRepr).join(", ") + "]";
    case "TupleValue":
      return "(" + (v.value as RuntimeLike[]).map(pyRepr).join(", ") + ")";
    case "ObjectValue":
      return "{" + [...(v.value as Map<string, RuntimeLike>)].map(([k, x]) => `${pyStrRepr(k)}: ${pyRepr(x)}`).join(", ") + "}";
    default:
      return String(v.value);
  }
}
