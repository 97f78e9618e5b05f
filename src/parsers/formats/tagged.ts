// Formats that wrap each call in an open and a close marker (Hermes/Qwen's
// `<tool_call>...</tool_call>`, Qwen3-Coder's XML inside the same tags, DeepSeek V3's
// `<｜tool▁call▁begin｜>...<｜tool▁call▁end｜>`): plain text up to an open marker; a call when
// the close arrives and its body parses; the body kept as text when it does not (nothing the
// model wrote is lost), and a call never closed stays text at the end.
import { firstMarker, plainPrefix } from "../text-scan.js";
import { text, wait, type Step, type ToolScanner } from "../tool-format.js";
import type { ParsedCall } from "../types.js";

export interface TaggedSpec {
  open: string;
  close: string;
  /** Markup that may stand alone and yields nothing (an outer block's begin and end). */
  drop?: readonly string[];
  /** The calls in one body (between open and close), or undefined when it does not parse. */
  parseBody(body: string): ParsedCall[] | undefined;
}

export function taggedScanner(spec: TaggedSpec): ToolScanner {
  const drop = spec.drop ?? [];
  const markers = [spec.open, ...drop];
  return {
    step(t: string, final: boolean): Step {
      const dropped = drop.find((d) => t.startsWith(d));
      if (dropped) return { kind: "drop", length: dropped.length };
      if (!t.startsWith(spec.open)) {
        const n = plainPrefix(t, markers, final);
        return n > 0 ? text(n) : final ? text(t.length) : wait;
      }
      const close = firstMarker(t, [spec.close], spec.open.length);
      if (!close) return final ? text(t.length) : wait;
      const length = close.at + spec.close.length;
      const calls = spec.parseBody(t.slice(spec.open.length, close.at));
      return calls && calls.length > 0 ? { kind: "calls", length, calls } : text(length);
    },
  };
}
