// Everything one isolate remembers between requests, in one object created with the app:
// in-flight loads, local breakers, discovered engine metadata, engine-reported loads, the
// client requests being served (for Abort), the registry view, the models' tokenizers and
// context lengths, the round-robin positions, and how engines are reached (the Worker's
// bindings, the VllmEngine clients). Tests build a fresh one. What stays at module level is
// immutable once made (schemas, encoders, lazily imported modules): docs/architecture.md.
import { EngineInfoCache } from "../backends/engine-info.js";
import type { TokenizerBundles } from "../backends/tokenizer-bundles.js";
import { ModelContexts } from "../backends/model-contexts.js";
import { EngineLoads } from "../core/in-flight.js";
import { LocalBreakers } from "./breakers.js";
import { ClientRequests } from "./client-requests.js";
import { AbortBatches } from "./abort-batches.js";
import { EngineClients } from "../backends/engine-clients.js";
import { RoundRobinCounters } from "./policies.js";
import { DEV_RING_CAPACITY, PointRing } from "../metrics/dev-ring.js";
import { newMetricsCounters, type MetricsCounters } from "../metrics/sink.js";
import { EngineLoadReadings } from "./engine-loads.js";
import { RegistryView } from "./snapshot.js";
import { ClusterMemory } from "./cluster-memory.js";
import type { EngineTarget } from "../core/types.js";

export interface IsolateState {
  /** The Worker's bindings and the VllmEngine clients (an LRU): every engine call goes through it. */
  engines: EngineClients;
  /** Round-robin positions per model and pool. */
  roundRobin: RoundRobinCounters;
  /** The metrics sinks' failure and drop counts, and the dev ring (DEV_METRICS=on). */
  metrics: { counters: MetricsCounters; ring: PointRing };
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
  const engines = new EngineClients();
  return {
    engines,
    roundRobin: new RoundRobinCounters(),
    metrics: { counters: newMetricsCounters(), ring: new PointRing(DEV_RING_CAPACITY) },
    loads: new EngineLoads(),
    breakers: new LocalBreakers(),
    engineInfo: new EngineInfoCache(),
    loadReadings: new EngineLoadReadings(engines),
    clientRequests: new ClientRequests(),
    abortBatches: new AbortBatches((engine, ids) => sendAbort(engines, engine, ids)),
    registry: new RegistryView(),
    modelContexts: new ModelContexts(),
    clusters: new ClusterMemory(),
  };
}

const ABORT_TIMEOUT_MS = 5_000;

async function sendAbort(engines: EngineClients, engine: EngineTarget, requestIds: string[]): Promise<void> {
  await engines.vllmEngine(engine)
    .abort({ requestIds }, { timeoutMs: ABORT_TIMEOUT_MS })
    .catch((err: unknown) => console.warn(JSON.stringify({ msg: "abort rpc failed", engine: engine.name, requestIds: requestIds.length, error: String(err) })));
}
