// Runs a reply through the output parser whole and in chunks, for the parser tests.
import { collectOutput, OutputParser, parseOutput, type OutputParserOptions } from "../../../src/parsers/output-parser.js";
import type { OutputDelta, ParsedOutput } from "../../../src/parsers/types.js";

/** Options with call ids that count from 1 per reply, so two runs compare equal. */
export function withIds(options: OutputParserOptions): OutputParserOptions {
  let n = 0;
  return { ...options, newCallId: () => `call_${++n}` };
}

export function whole(text: string, options: OutputParserOptions): ParsedOutput {
  return parseOutput(text, withIds(options));
}

export function streamDeltas(chunks: readonly string[], options: OutputParserOptions): OutputDelta[] {
  const parser = new OutputParser(withIds(options));
  return [...chunks.map((c) => parser.push(c)), parser.flush()];
}

export function streamed(chunks: readonly string[], options: OutputParserOptions): ParsedOutput {
  return collectOutput(streamDeltas(chunks, options));
}

/** A small seeded PRNG (mulberry32), so a failing split can be replayed. */
export function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `text` cut into pieces of 1..max code points (a decoded delta never splits one). */
export function randomChunks(text: string, random: () => number, max = 8): string[] {
  const cps = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < cps.length; ) {
    const n = 1 + Math.floor(random() * max);
    out.push(cps.slice(i, i + n).join(""));
    i += n;
  }
  return out;
}

/** Every code point its own delta. */
export function singleChars(text: string): string[] {
  return Array.from(text);
}
