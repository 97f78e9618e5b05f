// Locates the top-level members of a JSON object in its text, so the HTTP path can forward a
// client's body byte for byte (adding or dropping one member) and relay an engine's
// kv_transfer_params verbatim, instead of re-serialising either. Pure; expects text that
// JSON.parse accepts (the callers check that first) and returns undefined otherwise.

export interface JsonMember {
  /** The key, unescaped. */
  key: string;
  /** Index of the key's opening quote. */
  start: number;
  /** Index of the value's first character. */
  valueStart: number;
  /** Index just past the value. */
  end: number;
}

const WS = new Set([" ", "\t", "\n", "\r"]);

function skipWs(text: string, i: number): number {
  while (i < text.length && WS.has(text[i]!)) i++;
  return i;
}

/** Index just past the string starting at `i` (a quote), or -1. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === '"') return j + 1;
  }
  return -1;
}

/** Index just past the value starting at `i`, or -1. */
function valueEnd(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return stringEnd(text, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') {
        const e = stringEnd(text, j);
        if (e < 0) return -1;
        j = e - 1;
      } else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !WS.has(text[j]!) && text[j] !== "," && text[j] !== "}" && text[j] !== "]") j++;
  return j > i ? j : -1;
}

/** The members of the top-level object, in text order (duplicates kept), or undefined when
 *  the text is not an object. */
export function topLevelMembers(text: string): JsonMember[] | undefined {
  let i = skipWs(text, 0);
  if (text[i] !== "{") return undefined;
  i = skipWs(text, i + 1);
  const members: JsonMember[] = [];
  if (text[i] === "}") return skipWs(text, i + 1) === text.length ? members : undefined;
  for (;;) {
    if (text[i] !== '"') return undefined;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return undefined;
    let key: string;
    try {
      key = JSON.parse(text.slice(i, keyEnd)) as string;
    } catch {
      return undefined;
    }
    let j = skipWs(text, keyEnd);
    if (text[j] !== ":") return undefined;
    j = skipWs(text, j + 1);
    const end = valueEnd(text, j);
    if (end < 0) return undefined;
    members.push({ key, start: i, valueStart: j, end });
    i = skipWs(text, end);
    if (text[i] === ",") {
      i = skipWs(text, i + 1);
      continue;
    }
    if (text[i] === "}") return skipWs(text, i + 1) === text.length ? members : undefined;
    return undefined;
  }
}

/** The raw text of the last member named `key` (JSON.parse semantics: the last one wins). */
export function memberValueText(text: string, key: string): string | undefined {
  const members = topLevelMembers(text);
  const m = members?.filter((x) => x.key === key).pop();
  return m ? text.slice(m.valueStart, m.end) : undefined;
}

/** The object text with every member named `key` removed and, when `value` is given, the
 *  member `"key":value` put first. Every other member keeps its exact bytes. */
export function withMember(text: string, key: string, value: string | undefined): string | undefined {
  const members = topLevelMembers(text);
  if (!members) return undefined;
  let base = text;
  if (members.some((m) => m.key === key)) {
    const kept = members.filter((m) => m.key !== key).map((m) => text.slice(m.start, m.end));
    base = `{${kept.join(",")}}`;
  }
  if (value === undefined) return base;
  const open = base.indexOf("{");
  const rest = base.slice(open + 1);
  const empty = rest.trim() === "}";
  return `${base.slice(0, open)}{${JSON.stringify(key)}:${value}${empty ? "" : ","}${rest}`;
}
