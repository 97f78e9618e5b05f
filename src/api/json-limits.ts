// What a parsed request body (OpenAI, Responses, Anthropic Messages) may not hold (issue 32): a string, value or key, that is not
// well-formed UTF-16 (a lone surrogate, which only a "\ud800" escape can make: protobuf will
// not encode it and an engine's tokenizer cannot read it), or a value nested deeper than
// MAX_JSON_DEPTH (the gateway's lossless JSON reader's limit, below Python's). Pure. The body's
// text says when a walk is needed at all, so a plain request costs two native scans; the walk
// is iterative, since a 4 MiB body can nest two million levels deep.
import { MAX_JSON_DEPTH } from "../tokenizer/lossless-json.js";

export interface JsonLimitIssue {
  /** Where, in the OpenAI `param` form (messages[0].content), cut to its first levels. */
  param: string;
  message: string;
}

/** A "\uD800".."\uDFFF" escape: the only way a lone surrogate gets into a JSON string. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** Unicode-aware: a pair is one code point; only an unpaired half matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;
/** Path segments kept in `param` for a value nested too deep. */
const PARAM_SEGMENTS = 3;

export function jsonLimitIssue(text: string, body: unknown): JsonLimitIssue | undefined {
  const strings = SURROGATE_ESCAPE.test(text);
  const depth = moreOpenersThan(text, MAX_JSON_DEPTH);
  return strings || depth ? walk(body, strings) : undefined;
}

/** Whether the text has more than `n` "[" and "{" together: fewer cannot nest deeper than n. */
function moreOpenersThan(text: string, n: number): boolean {
  let count = 0;
  for (const c of ["[", "{"]) {
    for (let i = text.indexOf(c); i >= 0; i = text.indexOf(c, i + 1)) if (++count > n) return true;
  }
  return false;
}

interface Node {
  value: unknown;
  depth: number;
  parent: Node | undefined;
  key: string | number | undefined;
}

function walk(root: unknown, checkStrings: boolean): JsonLimitIssue | undefined {
  const stack: Node[] = [{ value: root, depth: 0, parent: undefined, key: undefined }];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value, depth } = node;
    if (depth > MAX_JSON_DEPTH) return { param: paramOf(node, PARAM_SEGMENTS), message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    if (typeof value === "string") {
      if (checkStrings && LONE_SURROGATE.test(value)) return { param: paramOf(node), message: "contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text" };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], depth: depth + 1, parent: node, key: i });
    } else if (typeof value === "object" && value !== null) {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        if (checkStrings && LONE_SURROGATE.test(key)) return { param: paramOf(node), message: "has a key with a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text" };
        stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, parent: node, key });
      }
    }
  }
  return undefined;
}

/** messages[0].content; at most `segments` levels from the top when given. */
function paramOf(node: Node, segments = Infinity): string {
  const keys: (string | number)[] = [];
  for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) keys.push(n.key);
  keys.reverse();
  let out = "";
  for (const k of keys.slice(0, segments)) out += typeof k === "number" ? `[${k}]` : out === "" ? k : `.${k}`;
  return out || "body";
}
