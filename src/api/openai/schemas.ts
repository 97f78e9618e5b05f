// zod schemas for the OpenAI requests the gateway accepts. They check the types of the fields
// the gateway reads or that commonly arrive wrong, and let every other field through: the
// engine receives the client's own JSON, never this schema's output. Value ranges beyond
// these (temperature bounds, logprobs limits) are the engine's to enforce.
import { z } from "zod";
import type { OpenAiRoute } from "../../backends/openai-bodies.js";

const int = () => z.number().int();
/** seed is an int64 upstream: any integer, not only the safe range. */
const anyInteger = () => z.number().refine(Number.isInteger, { message: "expected an integer" });
const tokenIds = () => z.array(int().min(0, { message: "token ids must be non-negative" }));

function common(maxN: number) {
  return {
    model: z.string().min(1, { message: "must not be empty" }),
    stream: z.boolean().nullish(),
    stream_options: z.looseObject({ include_usage: z.boolean().nullish(), continuous_usage_stats: z.boolean().nullish() }).nullish(),
    n: int().min(1, { message: "must be at least 1" }).max(maxN, { message: `must be at most ${maxN}` }).nullish(),
    max_tokens: int().min(1, { message: "must be at least 1" }).nullish(),
    stop: z.union([z.string(), z.array(z.string())]).nullish(),
    seed: anyInteger().nullish(),
    temperature: z.number().nullish(),
    top_p: z.number().nullish(),
    top_k: int().nullish(),
    min_p: z.number().nullish(),
    presence_penalty: z.number().nullish(),
    frequency_penalty: z.number().nullish(),
    repetition_penalty: z.number().nullish(),
    logit_bias: z.record(z.string(), z.number()).nullish(),
    user: z.string().nullish(),
    min_tokens: int().min(0, { message: "must be at least 0" }).nullish(),
    ignore_eos: z.boolean().nullish(),
    stop_token_ids: z.array(int()).nullish(),
    prompt_logprobs: int().min(0).nullish(),
  };
}

function chatSchema(maxN: number) {
  return z.looseObject({
    ...common(maxN),
    messages: z
      .array(
        z.looseObject({
          role: z.string(),
          content: z.union([z.string(), z.array(z.unknown()), z.null()]).optional(),
        }),
      )
      .min(1, { message: "must contain at least one message" }),
    max_completion_tokens: int().min(1, { message: "must be at least 1" }).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: int().min(0).nullish(),
  });
}

function completionSchema(maxN: number) {
  return z.looseObject({
    ...common(maxN),
    prompt: z.union(
      [
        z.string(),
        z.array(z.string()).min(1),
        tokenIds().min(1),
        z.array(tokenIds().min(1)).min(1),
      ],
      { message: "must be a string, an array of strings, an array of token ids, or an array of those" },
    ),
    echo: z.boolean().nullish(),
    logprobs: int().min(0).nullish(),
    best_of: int().min(1).nullish(),
    suffix: z.string().nullish(),
  });
}

export type OpenAiSchema = ReturnType<typeof chatSchema> | ReturnType<typeof completionSchema>;

const cache = new Map<string, OpenAiSchema>();

/** The schema for a route under a config's max_n (built once per isolate and limit). */
export function requestSchema(route: OpenAiRoute, maxN: number): OpenAiSchema {
  const key = `${route} ${maxN}`;
  let s = cache.get(key);
  if (!s) {
    s = route === "/v1/chat/completions" ? chatSchema(maxN) : completionSchema(maxN);
    cache.set(key, s);
  }
  return s;
}
