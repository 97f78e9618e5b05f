// The generation job: what every surface (OpenAI chat/completions on either engine kind,
// VllmEngine Generate) turns a client request into, and all that routing, the PD plan, the
// executor and the metrics writer read from it. Built in one place (api/job.ts). Every field
// is required: where absence is a real answer the type says `| undefined`, so a surface
// cannot forget one (the OpenAI-over-VllmEngine adapter once dropped the prompt length and
// the routing key, and the decider and consistent_hash quietly lost them).
import type { Surface } from "../core/types.js";
import type { PdOverride } from "./plan.js";

/** The prompt as the gateway knows it: token ids where it has them, else text. Also the
 *  input of prefix-affinity policies (routing/policies.ts `prefixKeyOf`). */
export type JobPrompt = { tokens: readonly number[] } | { text: string };

/** A prompt's length in tokens: exact for token ids, else estimated (pd/prompt-tokens.ts). */
export interface PromptTokens {
  count: number;
  exact: boolean;
}

/** Which API the client called: an OpenAI route, or the VllmEngine RPC. */
export type JobEndpoint = "/v1/chat/completions" | "/v1/completions" | "/v1/responses" | "/v1/messages" | "generate";

export interface JobIds {
  /** The client's id for its request (what its Abort names, x-request-id). */
  client: string;
  /** The engine-side id: attempt 1 uses it, attempt n adds "-n". */
  engine: string;
  /** The data-plane credential the request came with (Abort scoping). */
  owner: string;
}

export interface GenerationJob<P> {
  model: string;
  surface: Surface;
  endpoint: JobEndpoint;
  /** The request in the transport's own form (a GenerateRequest, an OpenAI body). */
  payload: P;
  /** Lazy and remembered: only worked out when a policy or the decider asks. */
  prompt(): JobPrompt;
  promptTokens(): PromptTokens;
  /** `x-routing-key`, for consistent_hash. */
  routingKey: string | undefined;
  /** Sequences asked for: n, times the prompts of a batched completions request. */
  fanout: number;
  hasMmInputs: boolean;
  /** `x-pd-override`, where the config allows it. */
  override: PdOverride | undefined;
  ids: JobIds;
  /** The output contract: streamed as it comes, or one answer. */
  streamed: boolean;
}
