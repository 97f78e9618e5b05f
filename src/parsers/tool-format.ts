// The contract every tool-call format implements: a scanner that, given the text not yet
// consumed, says how much of its start is settled and what it is. The streaming driver and
// the whole-text parse run the same scanner, so a reply parses the same however its text was
// split into deltas: a scanner only settles what no later text could change, and answers
// "wait" otherwise (never once the output is final).
import type { ParsedCall, ToolSpec } from "./types.js";

export type Step =
  /** `length` characters are plain text (content). */
  | { kind: "text"; length: number }
  /** `length` characters were markup holding these calls. */
  | { kind: "calls"; length: number; calls: ParsedCall[] }
  /** `length` characters are markup that yields nothing (a closing token, a separator). */
  | { kind: "drop"; length: number }
  /** Nothing is settled until more text arrives. */
  | { kind: "wait" };

export interface ToolScanner {
  /** The next settled piece at the start of `text` (non-empty). `final`: no more text will
   *  come, so the answer is never "wait". */
  step(text: string, final: boolean): Step;
}

export interface ToolFormat {
  /** The `tool_parser` name (config, docs/tools.md). */
  readonly name: string;
  /** Marker strings that are special tokens of the model's tokenizer: detokenization must
   *  keep them (skip_special_tokens would drop them) for this format to see its calls. */
  readonly specialTokens: readonly string[];
  /** A scanner for one reply; `tools` are the request's (formats that convert argument
   *  values by the declared parameter types read them). */
  scanner(tools: readonly ToolSpec[]): ToolScanner;
}

export const wait: Step = { kind: "wait" };
export const text = (length: number): Step => ({ kind: "text", length });
