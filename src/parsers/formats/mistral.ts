// Mistral (upstream: smg crates/tool_parser/src/parsers/mistral.rs, vLLM
// mistral_tool_parser.py): `[TOOL_CALLS]` then a JSON array of {"name", "arguments"} objects
// (or one such object), or the newer tokenizers' `[TOOL_CALLS]NAME[ARGS]{...}` (or `NAME{...}`,
// as vLLM reads it with [ARGS] skipped), repeated per call. Markup that does not read as calls stays text.
import { callFromJsonObject, minifyJson, scanJsonValue } from "../json-text.js";
import { plainPrefix, skipWhitespace } from "../text-scan.js";
import { text, wait, type Step, type ToolFormat } from "../tool-format.js";
import type { ParsedCall } from "../types.js";

const TOOL_CALLS = "[TOOL_CALLS]";
const ARGS = "[ARGS]";
const NAME = /[A-Za-z0-9_.\-]*/y;

function jsonCalls(raw: string): ParsedCall[] | undefined {
  const items: string[] = [];
  if (raw.startsWith("{")) items.push(raw);
  else {
    let i = skipWhitespace(raw, 1);
    while (raw[i] !== "]") {
      const end = scanJsonValue(raw, i, true);
      items.push(raw.slice(i, end));
      i = skipWhitespace(raw, end);
      if (raw[i] === ",") i = skipWhitespace(raw, i + 1);
    }
  }
  const calls = items.map((item) => callFromJsonObject(item, ["arguments", "parameters"]));
  return calls.length > 0 && calls.every((c) => c !== undefined) ? (calls as ParsedCall[]) : undefined;
}

/** The step for text starting with [TOOL_CALLS]. */
function toolCallsStep(t: string, final: boolean): Step {
  const i = skipWhitespace(t, TOOL_CALLS.length);
  if (i === t.length) return final ? text(t.length) : wait;
  if (t[i] === "[" || t[i] === "{") {
    const end = scanJsonValue(t, i, final);
    if (end === -1) return final ? text(TOOL_CALLS.length) : wait;
    const calls = end < 0 ? undefined : jsonCalls(t.slice(i, end));
    return calls ? { kind: "calls", length: end, calls } : text(TOOL_CALLS.length);
  }
  NAME.lastIndex = i;
  const name = NAME.exec(t)![0];
  const after = i + name.length;
  if (after === t.length || (ARGS.startsWith(t.slice(after)) && t.length - after < ARGS.length)) return final ? text(TOOL_CALLS.length) : wait;
  // NAME{...} is the same call with [ARGS] decoded away (vLLM's v11 text).
  const bare = t[after] === "{";
  if (name === "" || (!bare && !t.startsWith(ARGS, after))) return text(TOOL_CALLS.length);
  const start = bare ? after : after + ARGS.length;
  const end = scanJsonValue(t, start, final);
  if (end === -1) return final ? text(TOOL_CALLS.length) : wait;
  if (end < 0) return text(TOOL_CALLS.length);
  return { kind: "calls", length: end, calls: [{ name, arguments: minifyJson(t.slice(skipWhitespace(t, start), end)) }] };
}

export const mistral: ToolFormat = {
  name: "mistral",
  specialTokens: [TOOL_CALLS, ARGS],
  scanner: () => ({
    step(t: string, final: boolean): Step {
      if (t.startsWith(TOOL_CALLS)) return toolCallsStep(t, final);
      const n = plainPrefix(t, [TOOL_CALLS], final);
      return n > 0 ? text(n) : final ? text(t.length) : wait;
    },
  }),
};
