// The engine registry Durable Object (ARCHITECTURE decision 8): one object ("global") holds the
// engines added at run time and the health and breaker state every isolate shares. It is off
// the request hot path: isolates read a cached snapshot of it and report outcomes in batches
// (snapshot.ts). It runs the health checks itself, on an alarm that re-arms every
// health.interval_secs (alarms, unlike cron, go below a minute); the Worker's cron trigger
// only makes sure that alarm is alive.
import { DurableObject } from "cloudflare:workers";
import { parseConfig, type GatewayConfigVar } from "../config/load.js";
import { gatewayConfigSchema } from "../config/schema.js";
import { actsAlike, newBreaker, recordOutcome, type Breaker, type BreakerSettings } from "./breaker.js";
import type { EngineHealth } from "./health-state.js";
import { applyProbeResults, probeTargets, registryPlan, repointedTargets, runIsDue } from "./health-run.js";
import { probeEngine } from "./probe.js";
import { EngineClients } from "../backends/engine-clients.js";
import { RegistryStore } from "./registry-store.js";
import type {
  BreakerTransitionReport,
  EngineOutcome,
  HealthRunReport,
  NewRegistryEngine,
  RegistryConfig,
  RegistryEngine,
  RegistryEngineState,
  RegistryPlan,
  RegistryStatus,
  RegistryWriteResult,
  SharedEngineState,
  SnapshotAnswer,
} from "./registry-types.js";

/** Most names one sharedState() call answers for (far above any real engine count). */
const MAX_STATE_NAMES = 10_000;

/** Largest outcome batch taken in one call; an isolate never sends more (snapshot.ts). */
const MAX_OUTCOMES_PER_CALL = 1_000;

// Module-level: the schema's defaults, immutable and the same for every object.
let defaults: ReturnType<typeof gatewayConfigSchema.parse> | undefined;
const configDefaults = () => (defaults ??= gatewayConfigSchema.parse({ models: {} }));

/** The bindings the registry object reads (a subset of the Worker's Env). */
export interface RegistryEnv {
  GATEWAY_CONFIG?: GatewayConfigVar;
}

export class EngineRegistry extends DurableObject<RegistryEnv> {
  private readonly store: RegistryStore;
  /** The object's own way to engines (its bindings, its clients): it may share an isolate
   *  with the Worker's apps, and shares none of their state. */
  private readonly engineClients = new EngineClients();
  private readonly engines: Map<string, RegistryEngine>;
  private health: Map<string, EngineHealth>;
  private readonly breakers: Map<string, Breaker>;
  private readonly epoch: string;
  private version: number;
  private planText: string | undefined;
  private plan: RegistryPlan | undefined;
  private lastRunAt: number | undefined;
  /** Whether this instance has made sure an alarm is set for the current plan. */
  private alarmChecked = false;
  /** The health run in progress: alarm, cron and explicit calls share it instead of overlapping. */
  private running: Promise<HealthRunReport> | undefined;

  constructor(ctx: DurableObjectState, env: RegistryEnv) {
    super(ctx, env);
    // Health probes and discovery from here reach binding-routed engines through the
    // object's own bindings (declared like the Worker's, in wrangler.toml).
    this.engineClients.useBindings(env);
    this.store = new RegistryStore(ctx.storage.sql);
    this.engines = new Map(this.store.loadEngines().map((e) => [e.id, e]));
    this.health = this.store.loadHealth();
    this.breakers = this.store.loadBreakers();
    let epoch = this.store.getMeta("epoch");
    if (epoch === undefined) {
      epoch = crypto.randomUUID();
      this.store.setMeta("epoch", epoch);
    }
    this.epoch = epoch;
    this.version = Number(this.store.getMeta("version") ?? "0");
    this.planText = this.store.getMeta("plan");
    this.plan = this.planText === undefined ? undefined : (JSON.parse(this.planText) as RegistryPlan);
    const last = this.store.getMeta("last_health_run");
    this.lastRunAt = last === undefined ? undefined : Number(last);
  }

  // --- registry engines (admin API) ---

  list(model?: string): RegistryEngineState[] {
    return [...this.engines.values()].filter((e) => model === undefined || e.model === model).map((e) => this.stateOf(e));
  }

  get(id: string): RegistryEngineState | undefined {
    const e = this.engines.get(id);
    return e ? this.stateOf(e) : undefined;
  }

  /** The shared health and breaker state of engines by name (config engines too), for the
   *  admin listing. A pair list, not a record: names are user input. */
  sharedState(names: string[]): SharedEngineState[] {
    return names.slice(0, MAX_STATE_NAMES).map((name) => {
      const s: SharedEngineState = { name };
      const h = this.health.get(name);
      if (h) s.health = h;
      const b = this.breakers.get(name);
      if (b) s.breaker = b;
      return s;
    });
  }

  /** `config` (the caller's) lets a first registration start the health-check alarm even
   *  before any isolate has asked for a snapshot. */
  async add(input: NewRegistryEngine, config?: RegistryConfig): Promise<RegistryWriteResult> {
    if (config) this.adoptPlan(config);
    if (this.engines.has(input.id) || this.plan?.configEngines.some((t) => t.name === input.id)) {
      return { ok: false, code: "engine_exists", message: `an engine named "${input.id}" already exists` };
    }
    const dup = this.samePool(input);
    if (dup) return { ok: false, code: "engine_exists", message: `${input.url} is already registered for ${input.model}/${input.role} as "${dup.id}"` };
    const now = new Date().toISOString();
    const engine: RegistryEngine = { ...input, status: "active", created_at: now, updated_at: now };
    this.engines.set(engine.id, engine);
    this.store.putEngine(engine);
    this.bump();
    await this.ensureAlarm();
    return { ok: true, engine };
  }

  /** Full replace (the admin API re-ran discovery). A new URL or transport is a different
   *  engine as far as health and breakers go, so its shared state starts over. */
  async update(id: string, input: NewRegistryEngine & { status?: RegistryStatus }, config?: RegistryConfig): Promise<RegistryWriteResult> {
    if (config) this.adoptPlan(config);
    const old = this.engines.get(id);
    if (!old) return { ok: false, code: "engine_not_found", message: `no registry engine "${id}"` };
    const dup = this.samePool(input, id);
    if (dup) return { ok: false, code: "engine_exists", message: `${input.url} is already registered for ${input.model}/${input.role} as "${dup.id}"` };
    const engine: RegistryEngine = {
      ...input,
      id,
      status: input.status ?? old.status,
      created_at: old.created_at,
      updated_at: new Date().toISOString(),
    };
    if (engine.url !== old.url || engine.transport !== old.transport) this.forgetState(id);
    this.engines.set(id, engine);
    this.store.putEngine(engine);
    this.bump();
    await this.ensureAlarm();
    return { ok: true, engine };
  }

  drain(id: string): RegistryWriteResult {
    const old = this.engines.get(id);
    if (!old) return { ok: false, code: "engine_not_found", message: `no registry engine "${id}"` };
    if (old.status === "draining") return { ok: true, engine: old };
    const engine: RegistryEngine = { ...old, status: "draining", updated_at: new Date().toISOString() };
    this.engines.set(id, engine);
    this.store.putEngine(engine);
    this.bump();
    return { ok: true, engine };
  }

  /** Also removes a stored row that was skipped at load (unparsable or breaking the rules):
   *  DELETE is the way out of a bad entry, so it never depends on the entry making sense. */
  remove(id: string): boolean {
    const known = this.engines.delete(id);
    const stored = this.store.deleteEngine(id);
    if (!known && !stored) return false;
    this.forgetState(id);
    this.bump();
    return true;
  }

  // --- shared state (per-isolate snapshots, outcomes) ---

  /** Everything an isolate routes with; `since` (the caller's epoch and version) lets an
   *  unchanged registry answer with a few bytes. Also hands the object the caller's config
   *  and makes sure the health-check alarm runs. */
  async snapshot(config: RegistryConfig, since?: { epoch: string; version: number }): Promise<SnapshotAnswer> {
    this.adoptPlan(config);
    await this.ensureAlarm();
    if (since && since.epoch === this.epoch && since.version === this.version) {
      return { unchanged: true, epoch: this.epoch, version: this.version };
    }
    return {
      epoch: this.epoch,
      version: this.version,
      engines: [...this.engines.values()],
      health: Object.fromEntries(this.health),
      breakers: Object.fromEntries(this.breakers),
    };
  }

  /** Runs the breaker state machine (breaker.ts) on the shared state, in time order. */
  reportOutcomes(batch: EngineOutcome[], settings?: BreakerSettings): BreakerTransitionReport[] {
    const s = settings ?? this.plan?.breaker ?? configDefaults().breaker;
    const now = Date.now();
    const outcomes = batch
      .slice(0, MAX_OUTCOMES_PER_CALL)
      .filter((o) => typeof o?.engine === "string" && o.engine !== "" && Number.isInteger(o.status))
      .map((o) => ({ engine: o.engine, status: o.status, at: typeof o.at === "number" && o.at <= now ? o.at : now }))
      .sort((a, b) => a.at - b.at);
    if (outcomes.length === 0 || s.disabled) return [];
    const transitions: BreakerTransitionReport[] = [];
    // Each touched breaker as it was (undefined: new), to write and publish only what changed:
    // most batches are successes on clean closed breakers, and a new version makes every
    // isolate fetch and rebuild its routing snapshot.
    const before = new Map<string, Breaker | undefined>();
    for (const o of outcomes) {
      let b = this.breakers.get(o.engine);
      if (!before.has(o.engine)) before.set(o.engine, b && { ...b });
      if (!b) this.breakers.set(o.engine, (b = newBreaker(o.at)));
      const t = recordOutcome(b, s, o.status, o.at);
      if (t) transitions.push({ engine: o.engine, ...t, at: o.at });
    }
    let changed = false;
    for (const [name, was] of before) {
      const now = this.breakers.get(name)!;
      if (was && actsAlike(was, now)) continue;
      this.store.putBreaker(name, now);
      changed = true;
    }
    if (changed) this.bump();
    for (const t of transitions) console.log(JSON.stringify({ msg: "engine breaker changed", ...t }));
    return transitions;
  }

  // --- health checks ---

  /** Probes every config and active registry engine once. `ifDue` (the cron) skips the run
   *  when the alarm ran recently. Disabled health checks probe nothing. */
  async runHealthChecks(config?: RegistryConfig, opts: { ifDue?: boolean } = {}): Promise<HealthRunReport> {
    if (config) this.adoptPlan(config);
    const plan = this.currentPlan();
    if (!plan || plan.health.disabled) return this.report(false, 0, []);
    if (opts.ifDue && !this.running && !runIsDue(this.lastRunAt, plan.health.interval_secs, Date.now())) {
      await this.ensureAlarm();
      return this.report(false, 0, []);
    }
    return this.runChecks(plan);
  }

  override async alarm(): Promise<void> {
    const plan = this.currentPlan();
    // Disabled: let the alarm lapse; the next snapshot() with checks enabled re-arms it.
    if (!plan || plan.health.disabled) return;
    try {
      await this.runChecks(plan);
    } catch (err) {
      // runChecks re-armed before probing; a throw here would only make the runtime retry.
      console.error(JSON.stringify({ msg: "health run failed", error: String(err) }));
    }
  }

  private runChecks(plan: RegistryPlan): Promise<HealthRunReport> {
    this.running ??= this.probeAll(plan).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async probeAll(plan: RegistryPlan): Promise<HealthRunReport> {
    const started = Date.now();
    this.lastRunAt = started;
    this.store.setMeta("last_health_run", String(started));
    // Re-arm first: alarms are at-least-once and must re-arm themselves, and a run that dies
    // half-way must not stop the schedule.
    await this.ctx.storage.setAlarm(started + plan.health.interval_secs * 1000);
    this.alarmChecked = true;
    const targets = probeTargets(plan, [...this.engines.values()]);
    const results = await Promise.all(targets.map((t) => probeEngine(t, plan.health, this.engineClients)));
    // Engines may have been removed or re-pointed while the probes ran.
    const current = probeTargets(this.currentPlan() ?? plan, [...this.engines.values()]);
    const { next, transitions } = applyProbeResults(this.health, current, results, plan.health, Date.now());
    for (const name of this.health.keys()) if (!next.has(name)) this.store.deleteHealth(name);
    for (const [name, h] of next) this.store.putHealth(name, h);
    this.health = next;
    this.pruneBreakers(current.map((t) => t.name));
    this.bump();
    for (const t of transitions) console.log(JSON.stringify({ msg: "engine health changed", ...t }));
    return this.report(true, targets.length, transitions);
  }

  private report(ran: boolean, probed: number, transitions: HealthRunReport["transitions"]): HealthRunReport {
    return { ran, probed, transitions, health: Object.fromEntries(this.health), version: this.version };
  }

  // --- helpers ---

  private stateOf(engine: RegistryEngine): RegistryEngineState {
    const s: RegistryEngineState = { engine };
    const h = this.health.get(engine.id);
    if (h) s.health = h;
    const b = this.breakers.get(engine.id);
    if (b) s.breaker = b;
    return s;
  }

  private samePool(e: Pick<RegistryEngine, "model" | "role" | "url">, exceptId?: string): RegistryEngine | undefined {
    for (const other of this.engines.values()) {
      if (other.id !== exceptId && other.model === e.model && other.role === e.role && other.url === e.url) return other;
    }
    return undefined;
  }

  private forgetState(id: string): void {
    if (this.health.delete(id)) this.store.deleteHealth(id);
    if (this.breakers.delete(id)) this.store.deleteBreaker(id);
  }

  /** Breakers of engines that exist nowhere any more (config or registry) are dropped. */
  private pruneBreakers(live: string[]): void {
    const keep = new Set([...live, ...this.engines.keys()]);
    for (const name of [...this.breakers.keys()]) {
      if (!keep.has(name)) {
        this.breakers.delete(name);
        this.store.deleteBreaker(name);
      }
    }
  }

  private bump(): void {
    this.version++;
    this.store.setMeta("version", String(this.version));
  }

  /** Keeps the latest config the object was given, for the alarm; written only on change. */
  private adoptPlan(config: RegistryConfig): void {
    const plan = registryPlan(config);
    const text = JSON.stringify(plan);
    if (text === this.planText) return;
    const repointed = this.plan ? repointedTargets(this.plan.configEngines, plan.configEngines) : [];
    for (const name of repointed) this.forgetState(name);
    if (repointed.length > 0) this.bump();
    this.plan = plan;
    this.planText = text;
    this.store.setMeta("plan", text);
    this.alarmChecked = false;
  }

  /** The stored plan, else the object's own GATEWAY_CONFIG (an alarm before any caller). */
  private currentPlan(): RegistryPlan | undefined {
    if (this.plan) return this.plan;
    try {
      return registryPlan(parseConfig(this.env.GATEWAY_CONFIG));
    } catch {
      return undefined;
    }
  }

  /** Arms the alarm when none is set (first contact, or a lapsed schedule), or moves it
   *  earlier when the interval shrank. One storage read per plan per instance. */
  private async ensureAlarm(): Promise<void> {
    if (this.alarmChecked) return;
    const plan = this.currentPlan();
    if (!plan || plan.health.disabled) return;
    const now = Date.now();
    const due = now + plan.health.interval_secs * 1000;
    const at = await this.ctx.storage.getAlarm();
    if (at === null || at > due) await this.ctx.storage.setAlarm(due);
    this.alarmChecked = true;
  }
}
