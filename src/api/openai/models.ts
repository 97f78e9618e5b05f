// GET /v1/models and the question behind it: can a configured model be served over the
// OpenAI surface? Only openai-http engines take OpenAI text; a model served solely by
// VllmEngine (connect / grpc-web) engines needs a tokenizer in front of it, which the
// VllmEngine surface's clients bring themselves.
import type { LoadedConfig } from "../../config/load.js";

export const OPENAI_TRANSPORTS: ReadonlySet<string> = new Set(["openai-http"]);
const ENGINE_SURFACE_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web"]);

export type ModelAvailability =
  /** Not configured at all. */
  | "unknown"
  /** A PD pair or a regular engine speaks openai-http. */
  | "openai"
  /** Every engine of the model is a VllmEngine engine: use that surface. */
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

/** Seconds since the epoch when this isolate started: the models' `created`. */
const CREATED = Math.floor(Date.now() / 1000);

/** Every configured model (what a client can name), with the surfaces that can serve it. */
export function modelList(config: LoadedConfig) {
  return {
    object: "list",
    data: Object.keys(config.models)
      .sort()
      .map((id) => {
        const surfaces: string[] = [];
        const a = modelAvailability(config, id);
        if (a === "openai") surfaces.push("openai");
        const pools = config.models[id]!;
        if ([...pools.prefill, ...pools.decode, ...pools.regular].some((e) => ENGINE_SURFACE_TRANSPORTS.has(e.transport))) surfaces.push("engine");
        return { id, object: "model", created: CREATED, owned_by: "vllm-edge-gateway", surfaces };
      }),
  };
}
