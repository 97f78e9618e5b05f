// VllmEngine clients over Connect or gRPC-web (connect-web transports over fetch), one per
// engine URL and transport, cached per isolate. Loaded on first use (vllm-engine.ts): the
// generated descriptors and connect-web stay out of the isolate's start-up.
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { VllmEngine } from "../gen/vllm_engine_pb.js";
import { engineFetchFor } from "./fetch.js";

export type VllmEngineClient = Client<typeof VllmEngine>;

const clients = new Map<string, VllmEngineClient>();

export function connectVllmEngineClient(engine: { url: string; transport: string; binding?: string; name?: string }): VllmEngineClient {
  const key = `${engine.transport} ${engine.url} ${engine.binding ?? ""}`;
  let client = clients.get(key);
  if (!client) {
    const options = { baseUrl: engine.url, useBinaryFormat: true, fetch: engineFetchFor(engine) };
    const transport =
      engine.transport === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
    client = createClient(VllmEngine, transport);
    clients.set(key, client);
  }
  return client;
}
