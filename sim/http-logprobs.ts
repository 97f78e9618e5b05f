// Logprobs in the vLLM OpenAI server's shapes, from the same deterministic values the gRPC
// frames carry (sim/logprobs.ts): chat's {content: [{token, logprob, bytes, top_logprobs}]}
// and completions' {text_offset, token_logprobs, tokens, top_logprobs}. The sampled token is
// listed first among the alternatives, as a greedy engine ranks it.
import { simLogprob } from "./logprobs.js";
import { detokenize, fnv1a } from "./tokens.js";

export interface OutToken {
  id: number;
  text: string;
  /** Position in the sample's output. */
  pos: number;
}

const bytesOf = (t: string) => [...new TextEncoder().encode(t)];

/** k alternatives at a position: the sampled token, then others 0.75 apart. */
function alternatives(t: OutToken, k: number): { token: string; logprob: number }[] {
  const own = simLogprob(t.id, t.pos);
  const out = [{ token: t.text, logprob: own }];
  for (let j = 1; j < k; j++) out.push({ token: detokenize([100 + (fnv1a(`${t.id}:${t.pos}:${j}`) % 49_900)]), logprob: own - 0.75 * j });
  return out;
}

export function chatLogprobs(tokens: readonly OutToken[], k: number): { content: unknown[] } {
  return {
    content: tokens.map((t) => ({
      token: t.text,
      logprob: simLogprob(t.id, t.pos),
      bytes: bytesOf(t.text),
      top_logprobs: k > 0 ? alternatives(t, k).map((a) => ({ ...a, bytes: bytesOf(a.token) })) : [],
    })),
  };
}

/** `offset`: the length of the text before the first token (a stream's earlier chunks). */
export function completionLogprobs(tokens: readonly OutToken[], k: number, offset: number) {
  const text_offset: number[] = [];
  let at = offset;
  for (const t of tokens) {
    text_offset.push(at);
    at += t.text.length;
  }
  return {
    text_offset,
    token_logprobs: tokens.map((t) => simLogprob(t.id, t.pos)),
    tokens: tokens.map((t) => t.text),
    top_logprobs: tokens.map((t) => Object.fromEntries(alternatives(t, Math.max(k, 1)).map((a) => [a.token, a.logprob]))),
  };
}
