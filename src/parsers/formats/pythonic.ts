// Pythonic calls (Llama 4, Llama 3.2 and others; upstream: smg
// crates/tool_parser/src/parsers/pythonic.rs, vLLM pythonic_tool_parser.py):
// `[get_weather(city="Paris"), get_time(tz='UTC')]`, anywhere in the reply, optionally between
// Llama 4's `<|python_start|>` and `<|python_end|>` (dropped). A `[` opens a call list only
// when a name and `(` follow; a list that does not read as calls stays text.
import { parsePythonCallList } from "../python-literal.js";
import { plainPrefix } from "../text-scan.js";
import { text, wait, type Step, type ToolFormat } from "../tool-format.js";

const START = "<|python_start|>";
const END = "<|python_end|>";
const CALL_LIST_HEAD = /^\[\s*[A-Za-z_]\w*\s*\(/;
const MAYBE_HEAD = /^\[\s*(?:[A-Za-z_]\w*\s*)?$/;
const CLOSERS: Record<string, string> = { "[": "]", "(": ")", "{": "}" };

/** End (exclusive) of the bracketed block at `t[0]`, quotes respected; -1 when not closed yet. */
function blockEnd(t: string): number {
  const closers: string[] = [];
  let quote: string | undefined;
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (CLOSERS[c]) closers.push(CLOSERS[c]);
    else if (c === closers[closers.length - 1]) {
      closers.pop();
      if (closers.length === 0) return i + 1;
    }
  }
  return -1;
}

export const pythonic: ToolFormat = {
  name: "pythonic",
  specialTokens: [START, END],
  scanner: () => ({
    step(t: string, final: boolean): Step {
      for (const token of [START, END]) if (t.startsWith(token)) return { kind: "drop", length: token.length };
      if (t.startsWith("[")) {
        if (!CALL_LIST_HEAD.test(t)) return MAYBE_HEAD.test(t) && !final ? wait : text(1);
        const end = blockEnd(t);
        if (end < 0) return final ? text(1) : wait;
        const calls = parsePythonCallList(t.slice(0, end));
        return calls ? { kind: "calls", length: end, calls } : text(end);
      }
      const n = plainPrefix(t, ["[", START, END], final);
      return n > 0 ? text(n) : final ? text(t.length) : wait;
    },
  }),
};
