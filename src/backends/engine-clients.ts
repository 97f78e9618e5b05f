// How one isolate (or the registry object) reaches engines: the Worker's bindings, for
// engines behind a Workers VPC service, and the VllmEngine clients. Owned by IsolateState
// (routing/isolate.ts) and handed down, so two apps never share it and nothing here outlives
// the app that made it.
//
// Clients are cached because building one (transport, interceptors, method table) costs more
// than a request should pay; the cache is an LRU of at most MAX_ENGINE_CLIENTS, so engines
// that left the config or the registry (or URLs an admin tried once) fall out instead of
// piling up for the isolate's life.
import { engineFetchFor, hasFetchBinding, type Bindings } from "./fetch.js";
import { loadedVllmEngineClient, loadVllmEngineClient, standInClient, type VllmEngineClient } from "./vllm-engine.js";

/** What a transport needs to reach an engine; EngineClients is the one implementation. */
export interface EngineConnections {
  /** The fetch for the engine: its binding's when it names one, else the Worker's own. */
  fetchFor(engine: EngineAddress): typeof fetch;
  /** A VllmEngine client for the engine (a stand-in until the client module is in). */
  vllmEngine(engine: EngineAddress & { transport: string }): VllmEngineClient;
}

export interface EngineAddress {
  url: string;
  name?: string;
  binding?: string;
}

/** Far above a real deployment's engine count (each URL x transport x binding is one). */
const MAX_ENGINE_CLIENTS = 256;

export class EngineClients implements EngineConnections {
  private bindings: Bindings = {};
  private readonly clients = new Map<string, VllmEngineClient>();

  constructor(private readonly maxClients: number = MAX_ENGINE_CLIENTS) {}

  /** The Worker's env; the same object for every request of an isolate, so cheap to repeat. */
  useBindings(env: object): void {
    this.bindings = env as Bindings;
  }

  hasFetchBinding(name: string): boolean {
    return hasFetchBinding(this.bindings, name);
  }

  fetchFor(engine: EngineAddress): typeof fetch {
    return engineFetchFor(engine, () => this.bindings);
  }

  vllmEngine(engine: EngineAddress & { transport: string }): VllmEngineClient {
    const impl = loadedVllmEngineClient();
    // Not cached until the module is in: the stand-in asks again then, and that one is kept.
    if (!impl) return standInClient(() => loadVllmEngineClient().then(() => this.vllmEngine(engine)));
    const key = `${engine.transport} ${engine.url} ${engine.binding ?? ""}`;
    let client = this.clients.get(key);
    if (client) this.clients.delete(key); // re-inserted below: the Map's order is the LRU order
    else client = impl.createVllmEngineClient(engine, this.fetchFor(engine));
    this.clients.set(key, client);
    if (this.clients.size > this.maxClients) this.clients.delete(this.clients.keys().next().value!);
    return client;
  }

  /** Clients cached now (for tests and the bound). */
  get cachedClients(): number {
    return this.clients.size;
  }
}
