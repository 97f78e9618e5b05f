// Everything one isolate remembers between requests, in one object created with the app:
// in-flight loads, local breakers, discovered engine metadata, engine-reported loads, the
// client requests being served (for Abort), the registry view and the models' tokenizers. Tests build a fresh one.
import { EngineInfoCache } from "../backends/engine-info.js";
import type { TokenizerBundles } from "../backends/tokenizer-bundles.js";
import { ModelContexts } from "../backends/model-contexts.js";
import { EngineLoads } from "../core/in-flight.js";
import { LocalBreakers } from "./breakers.js";
import { ClientRequests } from "./client-requests.js";
import { AbortBatches } from "./abort-batches.js";
import { vllmEngineClient } from "../backends/vllm-engine.js";
import { EngineLoadReadings } from "./engine-loads.js";
import { RegistryView } from "./snapshot.js";
import { ClusterMemory } from "./cluster-memory.js";
import type { EngineTarget } from "../core/types.js";

export interface IsolateState {
  loads: EngineLoads;
  breakers: LocalBreakers;
  engineInfo: EngineInfoCache;
  loadReadings: EngineLoadReadings;
  clientRequests: ClientRequests;
  /** Client Abort calls coalesced per engine (one RPC in flight per engine). */
  abortBatches: AbortBatches;
  registry: RegistryView;
  /** Tokenizers of models the OpenAI surface serves over VllmEngine engines; created by that
   *  path on its first request (tokenizersOf), so the tokenizer libraries never load at start-up. */
  tokenizers?: TokenizerBundles;
  /** Context lengths of models served by VllmEngine engines (GetModelInfo). */
  modelContexts: ModelContexts;
  /** Sticky clusters of routing keys and recent capacity pushbacks (cluster choice). */
  clusters: ClusterMemory;
}

export function createIsolateState(): IsolateState {
  return {
    loads: new EngineLoads(),
    breakers: new LocalBreakers(),
    engineInfo: new EngineInfoCache(),
    loadReadings: new EngineLoadReadings(),
    clientRequests: new ClientRequests(),
    abortBatches: new AbortBatches(sendAbort),
    registry: new RegistryView(),
    modelContexts: new ModelContexts(),
    clusters: new ClusterMemory(),
  };
}

const ABORT_TIMEOUT_MS = 5_000;

async function sendAbort(engine: EngineTarget, requestIds: string[]): Promise<void> {
  await vllmEngineClient(engine)
    .abort({ requestIds }, { timeoutMs: ABORT_TIMEOUT_MS })
    .catch((err: unknown) => console.warn(JSON.stringify({ msg: "abort rpc failed", engine: engine.name, requestIds: requestIds.length, error: String(err) })));
}
