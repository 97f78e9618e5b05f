// Scripted replies on the sim's HTTP surfaces: a prompt containing <sim-say>TEXT</sim-say> makes
// every sample emit TEXT (cycled when the run is longer), as the Qwen3 engines do on gRPC
// (sim/tokenizer-bundle.ts). The sim's word tokenizer cannot spell arbitrary text, so a script
// is cut into its own "tokens": markup a parser keys on (<think>, </think>, <tool_call>,
// </tool_call>) is one token each, as in Qwen3's vocabulary, and other text goes in pieces of
// up to four characters (with any leading whitespace), so JSON and stop strings cross token
// boundaries as they do on a real engine.
import { fnv1a } from "./tokens.js";

const MIN_ID = 100;
const SPAN = 49_900;
const PIECE = /<\/?(?:think|tool_call)>|\s*[^\s<]{1,4}|\s+|</g;

/** A run's output tokens when they are fixed in advance: ids and each one's text. */
export interface Script {
  ids: number[];
  texts: string[];
}

/** TEXT of the first <sim-say>TEXT</sim-say> in the prompt, if any (and not empty). */
export function scriptText(prompt: string): string | undefined {
  const m = /<sim-say>([\s\S]*?)<\/sim-say>/.exec(prompt);
  return m && m[1] !== "" ? m[1] : undefined;
}

/** The text cut into tokens; each id is a stable function of its text. */
export function scriptOf(text: string): Script {
  const texts = text.match(PIECE) ?? [];
  return { texts, ids: texts.map((t) => MIN_ID + (fnv1a(t) % SPAN)) };
}
