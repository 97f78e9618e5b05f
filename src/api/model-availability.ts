// How a configured model is served over the HTTP surfaces (OpenAI, Responses, Anthropic
// Messages): openai-http engines take the API's text as it is; a model served solely by
// VllmEngine (connect / grpc-web) engines is tokenized by the gateway. Pure.
import type { LoadedConfig } from "../config/load.js";

export const OPENAI_TRANSPORTS: ReadonlySet<string> = new Set(["openai-http"]);
export const ENGINE_SURFACE_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web"]);

export type ModelAvailability =
  /** Not configured at all. */
  | "unknown"
  /** A PD pair or a regular engine speaks openai-http. */
  | "openai"
  /** Every engine of the model is a VllmEngine engine: the gateway tokenizes. */
  | "engine-only"
  /** openai-http engines exist, but no complete pair and no regular one (a config gap). */
  | "incomplete";

/** Pure. Mirrors selectEngines' rules (a PD pair, else a regular engine) without picking. */
export function modelAvailability(config: LoadedConfig, model: string): ModelAvailability {
  const pools = Object.hasOwn(config.models, model) ? config.models[model] : undefined;
  if (!pools) return "unknown";
  const http = (role: "prefill" | "decode" | "regular") => pools[role].some((e) => OPENAI_TRANSPORTS.has(e.transport));
  if ((http("prefill") && http("decode")) || http("regular")) return "openai";
  const all = [...pools.prefill, ...pools.decode, ...pools.regular];
  if (all.length > 0 && all.every((e) => ENGINE_SURFACE_TRANSPORTS.has(e.transport))) return "engine-only";
  return "incomplete";
}
