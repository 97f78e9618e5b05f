// Llama 3.x JSON calls (upstream: smg crates/tool_parser/src/parsers/llama.rs, vLLM
// llama_tool_parser.py): `<|python_tag|>{"name": ..., "parameters": {...}}`, or a reply that
// is (after leading whitespace) such an object; several calls separated by `;`. The calls run
// to the end of the reply, and anything after them that is not another call makes the whole
// stretch text, so a call is only settled at the end of the output.
import { callFromJsonObject, scanJsonValue } from "../json-text.js";
import { plainPrefix, skipWhitespace } from "../text-scan.js";
import { text, wait, type Step, type ToolFormat } from "../tool-format.js";
import type { ParsedCall } from "../types.js";

const PYTHON_TAG = "<|python_tag|>";

/** `obj ; obj ; ...` filling all of `s`, each object a call; undefined otherwise. */
export function jsonCallSequence(s: string, argKeys: readonly string[]): ParsedCall[] | undefined {
  const calls: ParsedCall[] = [];
  let i = skipWhitespace(s, 0);
  for (;;) {
    if (s[i] !== "{") return undefined;
    const end = scanJsonValue(s, i, true);
    if (end < 0) return undefined;
    const call = callFromJsonObject(s.slice(i, end), argKeys);
    if (!call) return undefined;
    calls.push(call);
    i = skipWhitespace(s, end);
    if (i === s.length) return calls;
    if (s[i] !== ";") return undefined;
    i = skipWhitespace(s, i + 1);
    if (i === s.length) return calls;
  }
}

function wholeRest(t: string, from: number): Step {
  const calls = jsonCallSequence(t.slice(from), ["parameters", "arguments"]);
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
