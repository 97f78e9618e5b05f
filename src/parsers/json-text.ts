// A JSON scanner over text that may still be growing: where one JSON value ends, whether it
// cannot be JSON, or whether more text is needed to tell. Parsers use it to find the end of a
// call's JSON without a closing marker, and to keep the model's own numbers and escapes.

/** More text is needed to tell where (or whether) the value ends. */
export const INCOMPLETE = -1;
/** The text cannot be JSON at this point. */
export const INVALID = -2;

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NUMBER_CHARS = /[-+\d.eE]*/y;
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

function skipWs(s: string, i: number): number {
  while (i < s.length && (s[i] === " " || s[i] === "\n" || s[i] === "\r" || s[i] === "\t")) i++;
  return i;
}

/** End index of the JSON string starting at `s[i]` (a `"`), or INCOMPLETE / INVALID. */
export function scanJsonString(s: string, i: number): number {
  let j = i + 1;
  for (;;) {
    if (j >= s.length) return INCOMPLETE;
    const c = s.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c < 0x20) return INVALID; // JSON strings hold no raw control characters
    if (c === 0x5c) {
      if (j + 1 >= s.length) return INCOMPLETE;
      const e = s[j + 1]!;
      if (ESCAPES.has(e)) j += 2;
      else if (e === "u") {
        const hex = s.slice(j + 2, j + 6);
        if (!/^[0-9a-fA-F]*$/.test(hex)) return INVALID;
        if (hex.length < 4) return INCOMPLETE;
        j += 6;
      } else return INVALID;
    } else j++;
  }
}

function scanNumber(s: string, i: number, endsAtText: boolean): number {
  NUMBER_CHARS.lastIndex = i;
  NUMBER_CHARS.exec(s);
  const extent = NUMBER_CHARS.lastIndex;
  if (extent === s.length && !endsAtText) return INCOMPLETE;
  NUMBER.lastIndex = i;
  const m = NUMBER.exec(s);
  if (!m || i + m[0].length !== extent) return extent === s.length ? INCOMPLETE : INVALID;
  return extent;
}

function scanLiteral(s: string, i: number): number {
  for (const lit of ["true", "false", "null"]) {
    const have = s.slice(i, i + lit.length);
    if (have === lit) return i + lit.length;
    if (lit.startsWith(have) && i + have.length === s.length) return INCOMPLETE;
  }
  return INVALID;
}

type State = "value" | "valueOrClose" | "key" | "keyOrClose" | "colon" | "after";

/**
 * End index (exclusive) of the JSON value at `s[start]` (leading whitespace skipped), or
 * INCOMPLETE / INVALID. `final`: the text will not grow, so a top-level number that runs to
 * its end is complete.
 */
export function scanJsonValue(s: string, start: number, final = false): number {
  const closers: string[] = [];
  let state: State = "value";
  let i = start;
  for (;;) {
    if (state === "after" && closers.length === 0) return i;
    i = skipWs(s, i);
    if (i >= s.length) return INCOMPLETE;
    const c = s[i]!;
    if (state === "after") {
      const top = closers[closers.length - 1]!;
      if (c === ",") state = top === "}" ? "key" : "value";
      else if (c === top) closers.pop();
      else return INVALID;
      i++;
    } else if (state === "colon") {
      if (c !== ":") return INVALID;
      state = "value";
      i++;
    } else if (state === "key" || state === "keyOrClose") {
      if (state === "keyOrClose" && c === "}") {
        closers.pop();
        state = "after";
        i++;
        continue;
      }
      if (c !== '"') return INVALID;
      i = scanJsonString(s, i);
      if (i < 0) return i;
      state = "colon";
    } else {
      if (state === "valueOrClose" && c === "]") {
        closers.pop();
        state = "after";
        i++;
        continue;
      }
      if (c === "{") {
        closers.push("}");
        state = "keyOrClose";
        i++;
        continue;
      }
      if (c === "[") {
        closers.push("]");
        state = "valueOrClose";
        i++;
        continue;
      }
      if (c === '"') i = scanJsonString(s, i);
      else if (c === "-" || (c >= "0" && c <= "9")) i = scanNumber(s, i, final && closers.length === 0);
      else i = scanLiteral(s, i);
      if (i < 0) return i;
      state = "after";
    }
  }
}

/** The JSON text without insignificant whitespace; strings, numbers and escapes as written. */
export function minifyJson(raw: string): string {
  let out = "";
  let i = 0;
  while (i < raw.length) {
    const c = raw[i]!;
    if (c === '"') {
      const end = scanJsonString(raw, i);
      const stop = end < 0 ? raw.length : end;
      out += raw.slice(i, stop);
      i = stop;
    } else {
      if (c !== " " && c !== "\n" && c !== "\r" && c !== "\t") out += c;
      i++;
    }
  }
  return out;
}

/** The members of a valid JSON object text, each value as its raw text (first key wins on
 *  duplicates, as the parsers read `name` and `arguments`). Undefined if `raw` is no object. */
export function jsonObjectMembers(raw: string): Map<string, string> | undefined {
  let i = skipWs(raw, 0);
  if (raw[i] !== "{") return undefined;
  const members = new Map<string, string>();
  i = skipWs(raw, i + 1);
  if (raw[i] === "}") return members;
  for (;;) {
    const keyEnd = scanJsonString(raw, i);
    if (keyEnd < 0) return undefined;
    const key = JSON.parse(raw.slice(i, keyEnd)) as string;
    i = skipWs(raw, keyEnd);
    if (raw[i] !== ":") return undefined;
    const valueStart = skipWs(raw, i + 1);
    const valueEnd = scanJsonValue(raw, valueStart, true);
    if (valueEnd < 0) return undefined;
    if (!members.has(key)) members.set(key, raw.slice(valueStart, valueEnd));
    i = skipWs(raw, valueEnd);
    if (raw[i] === "}") return members;
    if (raw[i] !== ",") return undefined;
    i = skipWs(raw, i + 1);
  }
}

/** The call a JSON object text names: `name` (a string) and its arguments under one of
 *  `argKeys` (absent: `{}`); undefined when the object names no function. */
export function callFromJsonObject(raw: string, argKeys: readonly string[]): { name: string; arguments: string } | undefined {
  const members = jsonObjectMembers(raw);
  const nameRaw = members?.get("name");
  if (!members || nameRaw === undefined || !nameRaw.startsWith('"')) return undefined;
  const name = JSON.parse(nameRaw) as string;
  if (name === "") return undefined;
  const argsRaw = argKeys.map((k) => members.get(k)).find((v) => v !== undefined);
  return { name, arguments: argsRaw === undefined ? "{}" : minifyJson(argsRaw) };
}
