// Logprobs in the sim's Generate frames, as the upstream servicer fills OutputLogProbs and
// InputLogProbs when SamplingParams asks (logprobs, prompt_logprobs): deterministic, plausible
// values, a function of the token and its position only, so the same request gets the same
// numbers streamed and not. Each token's alternatives list the sampled token first (as a
// greedy engine would) and then others at lower logprobs; `logprobs: 0` sends none.
import { create } from "@bufbuild/protobuf";
import { InputLogProbsSchema, OutputLogProbsSchema, type InputLogProbs, type OutputLogProbs } from "../src/gen/vllm_engine_pb.js";
import { fnv1a } from "./tokens.js";

const MIN_ID = 100;
const SPAN = 49_900;

/** The sampled token's logprob at a position: in (-2.5, -0.05]. */
export function simLogprob(id: number, pos: number): number {
  return -0.05 - (fnv1a(`${id}:${pos}`) % 245) / 100;
}

function alternatives(id: number, pos: number, own: number, k: number): { tokenIds: number[]; values: number[] } {
  const tokenIds = [id];
  const values = [own];
  for (let j = 1; j < k; j++) {
    tokenIds.push(MIN_ID + (fnv1a(`${id}:${pos}:${j}`) % SPAN));
    values.push(own - 0.75 * j);
  }
  return { tokenIds, values };
}

/** OutputLogProbs for `ids`, the first at output position `start`. */
export function outputLogprobs(ids: readonly number[], start: number, k: number): OutputLogProbs {
  const tokenLogprobs = ids.map((id, i) => simLogprob(id, start + i));
  return create(OutputLogProbsSchema, {
    tokenIds: [...ids],
    tokenLogprobs,
    topLogprobs: k > 0 ? ids.map((id, i) => alternatives(id, start + i, tokenLogprobs[i]!, k)) : [],
  });
}

/** InputLogProbs for a prompt: the first token has no logprob (nothing precedes it). */
export function inputLogprobs(promptIds: readonly number[], k: number): InputLogProbs {
  return create(InputLogProbsSchema, {
    tokenIds: [...promptIds],
    tokenLogprobs: promptIds.map((id, i) => (i === 0 ? {} : { value: simLogprob(id, -i) })),
    topLogprobs: k > 0 ? promptIds.map((id, i) => (i === 0 ? { tokenIds: [], values: [] } : alternatives(id, -i, simLogprob(id, -i), k))) : [],
  });
}
