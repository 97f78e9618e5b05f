// GET /v1/models and the question behind it: how is a configured model served over the
// OpenAI surface? openai-http engines take OpenAI text as it is; a model served solely by
// VllmEngine (connect / grpc-web) engines is tokenized by the gateway (engine-generation.ts).
import type { LoadedConfig } from "../../config/load.js";

export const OPENAI_TRANSPORTS: ReadonlySet<string> = new Set(["openai-http"]);
const ENGINE_SURFACE_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web"]);

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
        if (a === "openai" || a === "engine-only") surfaces.push("openai");
        const pools = config.models[id]!;
        if ([...pools.prefill, ...pools.decode, ...pools.regular].some((e) => ENGINE_SURFACE_TRANSPORTS.has(e.transport))) surfaces.push("engine");
        return { id, object: "model", created: CREATED, owned_by: "vllm-edge-gateway", surfaces };
      }),
  };
}
