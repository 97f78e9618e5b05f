// Llama 3.x JSON calls (upstream: smg crates/tool_parser/src/parsers/llama.rs, vLLM
// llama_tool_parser.py): `<|python_tag|>{"name": ..., "parameters": {...}}`, or a reply that
// is (after leading whitespace) such an object; several calls separated by `;` or whitespace.
// The calls run to the end of the reply, and anything after them that is not another call
// makes the whole stretch text (as smg; vLLM keeps the calls), so a call is only settled at
// the end of the output.
import { callFromJsonObject, jsonObjectMembers, scanJsonValue } from "../json-text.js";
import { plainPrefix, skipWhitespace } from "../text-scan.js";
import { text, wait, type Step, type ToolFormat } from "../tool-format.js";
import type { ParsedCall } from "../types.js";

const PYTHON_TAG = "<|python_tag|>";

const ARG_KEYS = ["parameters", "arguments"] as const;

/** The object at `i` as a call, and where it ends; vLLM needs a name and an arguments key. */
function callAt(s: string, i: number): { call: ParsedCall; end: number } | undefined {
  if (s[i] !== "{") return undefined;
  const end = scanJsonValue(s, i, true);
  if (end < 0) return undefined;
  const raw = s.slice(i, end);
  const members = jsonObjectMembers(raw);
  if (!members || !ARG_KEYS.some((k) => members.has(k))) return undefined;
  const call = callFromJsonObject(raw, ARG_KEYS);
  return call ? { call, end } : undefined;
}

/**
 * `call ; call ...` filling all of `s`, separated by `;` or whitespace (vLLM accepts both);
 * undefined otherwise: text after the calls makes the whole stretch text, as smg.
 */
export function jsonCallSequence(s: string): ParsedCall[] | undefined {
  const calls: ParsedCall[] = [];
  let i = skipWhitespace(s, 0);
  for (;;) {
    const next = callAt(s, i);
    if (!next) return undefined;
    calls.push(next.call);
    i = skipWhitespace(s, next.end);
    if (s[i] === ";") i = skipWhitespace(s, i + 1);
    if (i === s.length) return calls;
  }
}

function wholeRest(t: string, from: number): Step {
  const calls = jsonCallSequence(t.slice(from));
  return calls ? { kind: "calls", length: t.length, calls } : text(t.length);
}

export const llama3Json: ToolFormat = {
  name: "llama3_json",
  specialTokens: [PYTHON_TAG],
  scanner() {
    let atStart = true;
    return {
      step(t: string, final: boolean): Step {
        if (atStart) {
          const i = skipWhitespace(t, 0);
          if (i === t.length) return final ? text(t.length) : wait;
          if (t[i] === "{") return final ? wholeRest(t, i) : wait;
          atStart = false;
        }
        if (t.startsWith(PYTHON_TAG)) return final ? wholeRest(t, PYTHON_TAG.length) : wait;
        const n = plainPrefix(t, [PYTHON_TAG], final);
        return n > 0 ? text(n) : final ? text(t.length) : wait;
      },
    };
  },
};
