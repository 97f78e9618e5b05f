// GET /v1/models and the question behind it: how is a configured model served over the
// OpenAI surface? openai-http engines take OpenAI text as it is; a model served solely by
// VllmEngine (connect / grpc-web) engines is tokenized by the gateway (engine-generation.ts).
import type { LoadedConfig } from "../../config/load.js";
import { ENGINE_SURFACE_TRANSPORTS, modelAvailability } from "../model-availability.js";


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
