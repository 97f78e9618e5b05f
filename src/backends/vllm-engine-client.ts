// A VllmEngine client over Connect or gRPC-web (connect-web transports over fetch). Loaded on
// first use (vllm-engine.ts): the generated descriptors and connect-web stay out of the
// isolate's start-up. Clients are cached per isolate by EngineClients (engine-clients.ts).
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { VllmEngine } from "../gen/vllm_engine_pb.js";

export type VllmEngineClient = Client<typeof VllmEngine>;

export function createVllmEngineClient(engine: { url: string; transport: string }, fetch: typeof globalThis.fetch): VllmEngineClient {
  const options = { baseUrl: engine.url, useBinaryFormat: true, fetch };
  const transport = engine.transport === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
  return createClient(VllmEngine, transport);
}
