// The per-isolate view of the registry that the request hot path routes with (ARCHITECTURE
// decision 8). routingSnapshot() is synchronous and never awaits the Durable Object: it returns
// the last snapshot it has and, when that is older than registry.snapshot_ttl_ms, starts one
// background refresh through waitUntil. Outcomes go the other way in batches, also through
// waitUntil. Until the first refresh lands (or without a REGISTRY binding) the view is the
// config alone, which is what a gateway without a registry would route with anyway.
import type { LoadedConfig, LoadedModel } from "../config/load.js";
import { modelSchema, type EngineConfig } from "../config/schema.js";
import { currentState, type Breaker, type BreakerSettings, type BreakerState } from "./breaker.js";
import type { EngineHealth } from "./health-state.js";
import { registryStub, type RegistryNamespace } from "./registry-client.js";
import { registryEngineProblem } from "./registry-names.js";
import type { EngineOutcome, RegistryEngine, RegistrySnapshot } from "./registry-types.js";

export interface RoutingSnapshot {
  /** Config engines plus active registry engines, per model and role. */
  models: Record<string, LoadedModel>;
  /** Shared health of an engine (config or registry, by name); undefined = never probed, or
   *  health checks disabled. */
  health(name: string): EngineHealth | undefined;
  /** Shared breaker state (open turns half-open once its timeout has passed); undefined = no
   *  outcome recorded yet, or breakers disabled. */
  breaker(name: string): BreakerState | undefined;
  /** Registry version the view was built from; 0 = config only. */
  version: number;
}

export type WaitUntil = (promise: Promise<unknown>) => void;

/** A refresh still pending after this long is presumed lost with its request; the next call
 *  may start another. */
const REFRESH_STALE_MS = 10_000;
/** How long outcomes gather in an isolate before one RPC carries them all. */
export const OUTCOME_FLUSH_DELAY_MS = 250;
/** Outcomes kept per isolate between flushes; the oldest go first beyond this. */
const MAX_BUFFERED_OUTCOMES = 1_000;

// Parsed on first use: building the config schemas is start-up CPU an isolate may never need.
let modelDefaults: ReturnType<typeof modelSchema.parse> | undefined;
const MODEL_DEFAULTS = () => (modelDefaults ??= modelSchema.parse({}));

interface IsolateState {
  data: RegistrySnapshot | undefined;
  /** When data was last confirmed current, or a refresh last failed (ms). */
  fetchedAt: number;
  refreshing: { startedAt: number } | undefined;
  outcomes: EngineOutcome[];
  flushScheduled: boolean;
}

/** Where the registry is bound, if it is. */
export interface RegistryBinding {
  REGISTRY?: RegistryNamespace;
}

function freshState(): IsolateState {
  return { data: undefined, fetchedAt: Number.NEGATIVE_INFINITY, refreshing: undefined, outcomes: [], flushScheduled: false };
}

/** This isolate's view of the registry: the last snapshot, the refresh in flight, and the
 *  engine outcomes waiting to be sent. One per isolate, created with the app. */
export class RegistryView {
  private state: IsolateState = freshState();
  /** Built views, per config object (loadConfig caches one per text) and registry data. */
  private views = new WeakMap<LoadedConfig, { data: RegistrySnapshot | undefined; view: RoutingSnapshot }>();

  snapshot(env: RegistryBinding, config: LoadedConfig, waitUntil: WaitUntil, now: number = Date.now()): RoutingSnapshot {
    const ns = env.REGISTRY;
    if (ns) maybeRefresh(ns, config, waitUntil, now, this.state);
    const data = ns ? this.state.data : undefined;
    const cached = this.views.get(config);
    if (cached && cached.data === data) return cached.view;
    const view = buildView(config, data);
    this.views.set(config, { data, view });
    return view;
  }

  /** Queues one engine outcome for the shared breakers. Never blocks and never throws: the
   *  first outcome after a flush schedules the next flush (through this request's waitUntil),
   *  which sends everything gathered by then in one RPC. */
  reportOutcome(env: RegistryBinding, outcome: EngineOutcome, ctx: OutcomeContext): void {
    const ns = env.REGISTRY;
    const state = this.state;
    if (!ns || ctx.config.breaker.disabled) return;
    state.outcomes.push({ engine: outcome.engine, status: outcome.status, at: outcome.at ?? Date.now() });
    if (state.outcomes.length > MAX_BUFFERED_OUTCOMES) state.outcomes.splice(0, state.outcomes.length - MAX_BUFFERED_OUTCOMES);
    if (state.flushScheduled) return;
    state.flushScheduled = true;
    ctx.waitUntil(flushOutcomes(ns, ctx.config.breaker, state));
  }
}

function maybeRefresh(ns: RegistryNamespace, config: LoadedConfig, waitUntil: WaitUntil, now: number, state: IsolateState): void {
  if (now - state.fetchedAt < config.registry.snapshot_ttl_ms) return;
  if (state.refreshing && now - state.refreshing.startedAt < REFRESH_STALE_MS) return;
  const flight = { startedAt: now };
  state.refreshing = flight;
  const owner = state;
  waitUntil(
    refresh(ns, config, owner).finally(() => {
      if (owner.refreshing === flight) owner.refreshing = undefined;
    }),
  );
}

async function refresh(ns: RegistryNamespace, config: LoadedConfig, owner: IsolateState): Promise<void> {
  const since = owner.data ? { epoch: owner.data.epoch, version: owner.data.version } : undefined;
  try {
    const answer = await registryStub(ns).snapshot({ models: config.models, health: config.health, breaker: config.breaker }, since);
    if (!answer.unchanged) owner.data = answer as RegistrySnapshot;
  } catch (err) {
    // Keep routing with what we have; try again after another TTL rather than on every request.
    console.warn(JSON.stringify({ msg: "registry snapshot refresh failed", error: String(err) }));
  }
  owner.fetchedAt = Date.now();
}

/** Config engines merged with the active registry engines, plus the shared-state lookups.
 *  Engine names come from the admin API: the lookups are Maps, never plain-object keys. Pure. */
export function buildView(config: Pick<LoadedConfig, "models" | "health" | "breaker">, data: RegistrySnapshot | undefined): RoutingSnapshot {
  if (!data) {
    return { models: config.models, health: () => undefined, breaker: () => undefined, version: 0 };
  }
  const models = mergeModels(config.models, Array.isArray(data.engines) ? data.engines : []);
  const healthOf = ownEntries<EngineHealth>(data.health);
  const breakers = ownEntries<Breaker>(data.breakers);
  const health = config.health.disabled ? () => undefined : (name: string) => healthOf.get(name);
  const breaker = config.breaker.disabled ? () => undefined : (name: string) => breakerStateOf(breakers.get(name), config.breaker);
  return { models, health, breaker, version: data.version };
}

function ownEntries<T>(record: Record<string, T> | undefined): Map<string, T> {
  return new Map(typeof record === "object" && record !== null ? Object.entries(record) : []);
}

function breakerStateOf(b: Breaker | undefined, settings: BreakerSettings): BreakerState | undefined {
  // A copy: the lazy open -> half-open move must not rewrite the shared snapshot.
  return b ? currentState({ ...b }, settings, Date.now()).state : undefined;
}

/** Adds active registry engines to their model's pool (creating the model with default
 *  policies when the config does not have it). Draining engines are left out, so they take
 *  no new requests. An entry that fails the registry's own rules (registry-names.ts) is
 *  skipped with an error log: one bad row must not take routing down. The result has no
 *  prototype, so a model named like an Object.prototype key ("constructor") is just a model.
 *  The config's own objects are never mutated. Pure but for the log. */
export function mergeModels(models: Record<string, LoadedModel>, engines: readonly RegistryEngine[]): Record<string, LoadedModel> {
  const active = engines.filter((e) => e?.status === "active");
  if (active.length === 0) return models;
  const out: Record<string, LoadedModel> = Object.create(null) as Record<string, LoadedModel>;
  for (const [name, m] of Object.entries(models)) {
    out[name] = { ...m, prefill: [...m.prefill], decode: [...m.decode], encode: [...m.encode], regular: [...m.regular] };
  }
  for (const e of active) {
    const problem = registryEngineProblem(e);
    if (problem) {
      console.error(JSON.stringify({ msg: "registry engine skipped", engine: String(e.id), problem }));
      continue;
    }
    const m = (out[e.model] ??= { policy: { ...MODEL_DEFAULTS().policy }, pd: { ...MODEL_DEFAULTS().pd }, sse_relay: MODEL_DEFAULTS().sse_relay, generate_relay: MODEL_DEFAULTS().generate_relay, apis_via_chat: MODEL_DEFAULTS().apis_via_chat, prefill: [], decode: [], encode: [], regular: [] });
    if (m[e.role].some((c) => c.name === e.id)) continue;
    m[e.role].push(toEngineConfig(e));
  }
  return out;
}

/** A registry engine as the selection and the executors see every engine. Discovered
 *  metadata is not copied in: the request path discovers KV metadata itself (engine-info.ts),
 *  exactly as for config engines, so a re-configured engine is picked up without a PUT. */
export function toEngineConfig(e: RegistryEngine): EngineConfig {
  const c: EngineConfig = { name: e.id, url: e.url, transport: e.transport, labels: { ...e.labels } };
  if (e.kv_connector !== undefined) c.kv_connector = e.kv_connector;
  if (e.kv_engine_id !== undefined) c.kv_engine_id = e.kv_engine_id;
  if (e.dp_rank !== undefined) c.dp_rank = e.dp_rank;
  if (e.dp_size !== undefined) c.dp_size = e.dp_size;
  if (e.bootstrap_port !== undefined) c.bootstrap_port = e.bootstrap_port;
  if (e.binding !== undefined) c.binding = e.binding;
  if (e.cluster !== undefined) c.cluster = e.cluster;
  return c;
}

export interface OutcomeContext {
  config: Pick<LoadedConfig, "breaker">;
  waitUntil: WaitUntil;
}

async function flushOutcomes(ns: RegistryNamespace, settings: BreakerSettings, owner: IsolateState): Promise<void> {
  await new Promise((r) => setTimeout(r, OUTCOME_FLUSH_DELAY_MS));
  owner.flushScheduled = false;
  const batch = owner.outcomes.splice(0);
  if (batch.length === 0) return;
  try {
    await registryStub(ns).reportOutcomes(batch, settings);
  } catch (err) {
    // Lost outcomes only delay a breaker; the request they came from is long answered.
    console.warn(JSON.stringify({ msg: "reporting engine outcomes failed", outcomes: batch.length, error: String(err) }));
  }
}

