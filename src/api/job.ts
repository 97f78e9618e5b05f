// The one builder of generation jobs (pd/job.ts): every surface hands it what it parsed, and
// what all surfaces read the same way (the prompt's length, the routing key, the PD override,
// the engine-side id) is worked out here, once.
import type { GatewayContext } from "../context.js";
import type { Surface } from "../core/types.js";
import type { GenerationJob, JobEndpoint, JobPrompt, PromptTokens } from "../pd/job.js";
import { estimatePromptTokens } from "../pd/prompt-tokens.js";
import { engineRequestIdFor } from "../routing/client-requests.js";
import { pdOverrideOf } from "./pd-override.js";

export interface JobInput<P> {
  model: string;
  surface: Surface;
  endpoint: JobEndpoint;
  payload: P;
  /** Worked out on first use (a chat's text is joined from its messages). */
  prompt: () => JobPrompt;
  fanout: number;
  hasMmInputs: boolean;
  streamed: boolean;
  /** The client's id for its request. */
  clientRequestId: string;
  /** The client's request headers: `x-routing-key`, `x-pd-override`. */
  headers: Headers;
}

export function buildJob<P>(gw: Pick<GatewayContext, "owner" | "config">, i: JobInput<P>): GenerationJob<P> {
  const prompt = once(i.prompt);
  const key = i.headers.get("x-routing-key");
  return {
    model: i.model,
    surface: i.surface,
    endpoint: i.endpoint,
    payload: i.payload,
    prompt,
    promptTokens: once(() => promptTokensOf(prompt())),
    routingKey: key === null ? undefined : key,
    fanout: i.fanout,
    hasMmInputs: i.hasMmInputs,
    override: pdOverrideOf(i.headers, gw.config.debug.allow_pd_overrides),
    ids: { client: i.clientRequestId, engine: engineRequestIdFor(gw.owner, i.clientRequestId), owner: gw.owner },
    streamed: i.streamed,
  };
}

/** Exact for token ids; for text, the estimate the decider documents (docs/pd.md). Pure. */
export function promptTokensOf(p: JobPrompt): PromptTokens {
  return "tokens" in p ? { count: p.tokens.length, exact: true } : { count: estimatePromptTokens(p.text), exact: false };
}

function once<T>(f: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = f();
      done = true;
    }
    return value;
  };
}
