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

/** Made per request from the isolate's engine clients: a transport is two small closures. */
export function vllmEngineFamily(isolate: IsolateState, discoveryTtlMs: number): EngineFamily<GenerateRequest, GenerateResponse> {
  const { engines } = isolate;
  return {
    transport: vllmEngineTransport((engine) => engines.vllmEngine(engine)),
    transports: VLLM_ENGINE_TRANSPORTS,
    // The connector mode comes from the prefill engine; decode needs only its config entry.
    kvMeta: (engine, leg) =>
      leg === "prefill" ? isolate.engineInfo.kvMeta(engine, engines.vllmEngine(engine), discoveryTtlMs) : Promise.resolve(mergeKvMeta(engine, undefined)),
  };
}

export function openAiHttpFamily(isolate: IsolateState): EngineFamily<OpenAiHttpPayload, Uint8Array> {
  return {
    transport: openAiHttpTransport(isolate.engines),
    transports: OPENAI_HTTP_TRANSPORTS,
    // No GetServerInfo over HTTP: the connector comes from the engine's config entry.
    kvMeta: (engine) => Promise.resolve(mergeKvMeta(engine, undefined)),
  };
}
