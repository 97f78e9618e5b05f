// The engine families a job can run on: VllmEngine engines (Connect / gRPC-web), whose KV
// metadata the prefill engine reports over GetServerInfo, and vLLM OpenAI HTTP engines,
// whose metadata comes from their config entry alone.
import type { GenerateRequest, GenerateResponse } from "../gen/vllm_engine_pb.js";
import { mergeKvMeta } from "../backends/engine-info.js";
import { openAiHttpTransport, type OpenAiHttpPayload } from "../backends/openai-http-transport.js";
import { vllmEngineTransport } from "../backends/vllm-engine-transport.js";
import type { IsolateState } from "./isolate.js";
import type { EngineFamily } from "./pipeline.js";

/** Engine entries reachable with VllmEngine clients from a Worker. */
export const VLLM_ENGINE_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web"]);
export const OPENAI_HTTP_TRANSPORTS: ReadonlySet<string> = new Set(["openai-http"]);

/** One family per isolate (and discovery TTL): what a family captures (the engine clients,
 *  the discovered engine metadata) lives as long as the isolate, so it is built once. */
const vllmFamilies = new WeakMap<IsolateState, { ttlMs: number; family: EngineFamily<GenerateRequest, GenerateResponse> }>();
const httpFamilies = new WeakMap<IsolateState, EngineFamily<OpenAiHttpPayload, Uint8Array>>();

export function vllmEngineFamily(isolate: IsolateState, discoveryTtlMs: number): EngineFamily<GenerateRequest, GenerateResponse> {
  const known = vllmFamilies.get(isolate);
  if (known?.ttlMs === discoveryTtlMs) return known.family;
  const { engines } = isolate;
  const family: EngineFamily<GenerateRequest, GenerateResponse> = {
    transport: vllmEngineTransport((engine) => engines.vllmEngine(engine)),
    transports: VLLM_ENGINE_TRANSPORTS,
    // The connector mode comes from the prefill engine; decode needs only its config entry.
    kvMeta: (engine, leg) =>
      leg === "prefill" ? isolate.engineInfo.kvMeta(engine, engines.vllmEngine(engine), discoveryTtlMs) : Promise.resolve(mergeKvMeta(engine, undefined)),
  };
  vllmFamilies.set(isolate, { ttlMs: discoveryTtlMs, family });
  return family;
}

export function openAiHttpFamily(isolate: IsolateState): EngineFamily<OpenAiHttpPayload, Uint8Array> {
  let family = httpFamilies.get(isolate);
  if (!family) {
    family = {
      transport: openAiHttpTransport(isolate.engines),
      transports: OPENAI_HTTP_TRANSPORTS,
      // No GetServerInfo over HTTP: the connector comes from the engine's config entry.
      kvMeta: (engine) => Promise.resolve(mergeKvMeta(engine, undefined)),
    };
    httpFamilies.set(isolate, family);
  }
  return family;
}
