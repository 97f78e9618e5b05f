// VllmEngine clients, loaded lazily: the Connect client, connect-web and the generated
// descriptors (vllm-engine-client.ts) are imported on the first call, so an isolate that only
// serves OpenAI HTTP engines never builds the protobuf registry at start-up. Until that module
// is in, a client is a stand-in with every method of the service, each waiting for it.
// The two module-level lets hold the lazily imported module itself (immutable code, the same
// for every app in the isolate), not state of any request or engine.
import type { VllmEngineClient } from "./vllm-engine-client.js";

export type { VllmEngineClient } from "./vllm-engine-client.js";

type Impl = typeof import("./vllm-engine-client.js");
let impl: Impl | undefined;
let loading: Promise<Impl> | undefined;

/** The client module, loaded once per isolate. */
export function loadVllmEngineClient(): Promise<Impl> {
  return (loading ??= import("./vllm-engine-client.js").then((m) => (impl = m)));
}

/** The client module if it is in already. */
export function loadedVllmEngineClient(): Impl | undefined {
  return impl;
}

/** The service's methods (proto/vllm_engine.proto); a unit test keeps the lists in step. */
export const UNARY_METHODS = ["embed", "healthCheck", "abort", "getModelInfo", "getServerInfo", "getLoads"] as const;
export const STREAMING_METHODS = ["generate", "getTokenizer", "subscribeKvEvents"] as const;

/** A client whose every method first waits for `real` (called once per method call). */
export function standInClient(real: () => Promise<VllmEngineClient>): VllmEngineClient {
  const client = () => real() as unknown as Promise<Record<string, (...a: unknown[]) => unknown>>;
  const standIn: Record<string, (...a: unknown[]) => unknown> = {};
  for (const name of UNARY_METHODS) standIn[name] = (...args) => client().then((c) => c[name]!(...args));
  for (const name of STREAMING_METHODS) {
    standIn[name] = (...args) =>
      (async function* () {
        yield* (await client())[name]!(...args) as AsyncIterable<unknown>;
      })();
  }
  return standIn as unknown as VllmEngineClient;
}
