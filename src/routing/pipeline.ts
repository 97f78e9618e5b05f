// One generation pipeline for every surface and transport: select engines, run one attempt
// through the executor, and retry a failure that reached no client byte on a new selection
// with a fresh engine-side request id (pd-reference T15: an engine may still hold the old
// one). The engine whose leg failed is avoided on the next attempt, and one that hung is never
// tried again; every attempt fits in the request's deadline (`retry.deadline_ms`). When no
// engine is left for a retry, the client gets the failure that made it, not "no engine".
import type { LoadedConfig } from "../config/load.js";
import type { EngineConfig, EngineRole, PolicyName } from "../config/schema.js";
import { GatewayError, requestAbortedError } from "../core/errors.js";
import type { EngineKvMeta } from "../core/kv-meta.js";
import type { LegTransport } from "../core/leg-transport.js";
import { delay } from "../core/time.js";
import { uuidv7 } from "../core/ids.js";
import type { EngineTarget, Leg, SkipReason } from "../core/types.js";
import type { EventSink } from "../metrics/events.js";
import { runAttempt, type AttemptResult, type GenerationJob } from "../pd/executor.js";
import type { PlanInputs } from "../pd/plan.js";
import type { OutcomeReporter } from "../pd/leg.js";
import { engineRoutable, whyNotRoutable } from "./admission.js";
import type { TrackedRequest } from "./client-requests.js";
import type { IsolateState } from "./isolate.js";
import { prefixKeyOf } from "./policies.js";
import { exclusionAfter, nextRetryDelay, type RetryState } from "./retry.js";
import { selectAnotherDecode, selectEngines, type SelectOptions, type Selection } from "./select.js";
import type { RoutingSnapshot } from "./snapshot.js";
import { routeCluster, type ClusterRoute } from "./cluster-route.js";
import { clusterOf } from "./cluster-view.js";
import type { GeoPoint } from "./geo.js";

export interface PipelineContext {
  config: LoadedConfig;
  routing: RoutingSnapshot;
  isolate: IsolateState;
  events: EventSink;
  outcomes: OutcomeReporter;
  clientSignal: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  /** Where the client is (config geo.header, or the edge's request.cf), for cluster choice;
   *  throws a 400 for a malformed geo header. */
  client?(): GeoPoint | undefined;
}

/** A transport with what the pipeline needs around it. */
export interface EngineFamily<P, F> {
  transport: LegTransport<P, F>;
  /** Engine entries (config `transport`) this family can call. */
  transports: ReadonlySet<string>;
  /** KV metadata of a selected engine (discovered where the protocol can ask). */
  kvMeta(engine: EngineConfig, leg: "prefill" | "decode"): Promise<EngineKvMeta>;
}

/** A job and how to run it. The hooks are the surface's: they render, they decide nothing. */
export interface PipelineRequest<P, F> {
  job: GenerationJob<P>;
  family: EngineFamily<P, F>;
  onDecision?(skipReason: SkipReason | undefined): void;
  onBackend?(backend: "pd" | "regular"): void;
  /** Told each attempt's cluster before its legs run (for the x-gateway-cluster header). */
  onCluster?(cluster: string): void;
}

export interface PipelineResult<F> extends AttemptResult<F> {
  /** The engine-side id of the attempt that answered. */
  engineRequestId: string;
}

/** What the request's earlier attempts left for the next one. */
interface AttemptHistory {
  /** Engines that failed: avoided while another can take the attempt. */
  exclude: Set<string>;
  /** Engines that hung: never tried again for this request. */
  never: Set<string>;
  /** The request's deadline (epoch ms). */
  deadlineAt: number;
  /** The last attempt's failure: what the client gets when no engine is left for a retry. */
  last?: GatewayError;
}

export async function runPipeline<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>): Promise<PipelineResult<F>> {
  // Tracked for the client's Abort call from the start to the end of its stream, across
  // attempts and decode failover: the call reaches whichever legs run then.
  const tracked = ctx.isolate.clientRequests.track(req.job.ids.client, req.job.ids.owner);
  try {
    return await attempts(ctx, req, tracked);
  } catch (err) {
    tracked.untrack();
    throw err;
  }
}

async function attempts<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>, tracked: TrackedRequest): Promise<PipelineResult<F>> {
  const started = Date.now();
  const history: AttemptHistory = { exclude: new Set(), never: new Set(), deadlineAt: started + ctx.config.retry.deadline_ms };
  const retry: RetryState = { attempts: 0, backoffSpentMs: 0 };
  for (;;) {
    retry.attempts++;
    const engineRequestId = retry.attempts === 1 ? req.job.ids.engine : `${req.job.ids.engine}-${retry.attempts}`;
    try {
      // Aborted between attempts: no engine holds the request, so nothing is sent.
      if (tracked.abortRequested.aborted) throw requestAbortedError();
      return { ...(await attempt(ctx, req, engineRequestId, history, tracked)), engineRequestId };
    } catch (err) {
      if (!(err instanceof GatewayError) || ctx.clientSignal.aborted || tracked.abortRequested.aborted) throw err;
      if (err === history.last) throw err; // no engine was left to retry on
      if (err.engine !== undefined) (exclusionAfter(err.code) === "never" ? history.never : history.exclude).add(err.engine);
      // A full engine makes its cluster look saturated to other requests too, for a while.
      if (err.engine !== undefined && ctx.config.retry.capacity_status_codes.includes(err.status)) ctx.isolate.clusters.notePushback(err.engine, Date.now());
      if (err.retryable === false) throw err;
      const wait = nextRetryDelay(err.status, false, { ...retry, elapsedMs: Date.now() - started }, ctx.config.retry);
      if (wait === undefined) throw err;
      console.warn(JSON.stringify({ msg: "retrying request", requestId: req.job.ids.engine, attempt: retry.attempts, engine: err.engine, status: err.status, code: err.code, waitMs: wait }));
      history.last = err;
      retry.backoffSpentMs += wait;
      await delay(wait);
    }
  }
}

async function attempt<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>, requestId: string, history: AttemptHistory, tracked: TrackedRequest): Promise<AttemptResult<F>> {
  const { job, family } = req;
  const route = clusterRoute(ctx, req, history);
  const selection = select(ctx, req, history, route);
  const cluster = clusterOf(selection.kind === "regular" ? selection.engine : selection.decode);
  if (route && req.job.routingKey !== undefined && ctx.config.geo.sticky) ctx.isolate.clusters.remember(req.job.routingKey, cluster);
  req.onCluster?.(cluster);
  const target = (e: EngineConfig): EngineTarget => ({ name: e.name, url: e.url, transport: e.transport, cluster: clusterOf(e), ...(e.binding !== undefined ? { binding: e.binding } : {}) });
  const engines =
    selection.kind === "regular"
      ? { decode: { target: target(selection.engine), meta: { bootstrapHost: "" } }, hasEncodeAssignments: false }
      : {
          prefill: { target: target(selection.prefill), meta: await family.kvMeta(selection.prefill, "prefill") },
          decode: { target: target(selection.decode), meta: await family.kvMeta(selection.decode, "decode") },
          // vLLM has no encode stage of its own: a model with an encode pool is EPD-configured,
          // and its prefill engine may be where embeddings land, so prefill is kept.
          hasEncodeAssignments: selection.hasEncodeEngines,
          decider: deciderInputs(ctx, job.model, selection.prefill, selection.decode),
          // Decode failover: another decode engine of the pool, none tried yet for this attempt,
          // in the same cluster (the handoff is valid only there).
          anotherDecode: async (tried: ReadonlySet<string>) => {
            const engine = selectAnotherDecode(ctx.config, job.model, family.transports, { ...selectOptions(ctx, req, tried, history.never), ...(route ? { models: route.models } : {}) });
            return engine ? { target: target(engine), meta: await family.kvMeta(engine, "decode") } : undefined;
          },
        };
  req.onBackend?.(selection.kind === "regular" ? "regular" : "pd");
  return runAttempt(family.transport, job, engines, requestId, {
    model: job.model,
    clientSignal: ctx.clientSignal,
    abortRequested: tracked.abortRequested,
    waitUntil: ctx.waitUntil,
    loads: ctx.isolate.loads,
    outcomes: ctx.outcomes,
    events: ctx.events,
    timeouts: {
      prefillTimeoutMs: ctx.config.pd.prefill_timeout_ms,
      firstFrameTimeoutMs: ctx.config.pd.first_frame_timeout_ms,
      deferredAbortMaxMs: ctx.config.pd.deferred_abort_max_ms,
      deadlineAt: history.deadlineAt,
    },
    mintTransferId: () => `xfer-${uuidv7()}`,
    onStreamEnd: tracked.untrack,
    logPaths: ctx.config.debug.log_paths,
    ...(req.onDecision ? { onDecision: req.onDecision } : {}),
  });
}

function selectOptions<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>, exclude: ReadonlySet<string>, never: ReadonlySet<string>): SelectOptions {
  const { model } = req.job;
  return {
    models: ctx.routing.models,
    load: ctx.isolate.loadReadings.loadFunction({ settings: ctx.config.loads, models: ctx.routing.models, local: ctx.isolate.loads, waitUntil: ctx.waitUntil }),
    routable: engineRoutable(ctx.routing, ctx.isolate.breakers, ctx.config.breaker),
    counters: ctx.isolate.roundRobin,
    exclude,
    never,
    ...(req.job.routingKey !== undefined ? { routingKey: req.job.routingKey } : {}),
    prefixKey: () => prefixKeyOf(req.job.prompt()),
    onSelect: (e: EngineConfig, leg: Leg, policy: PolicyName) => ctx.events.emit({ type: "engine_selection", model, engine: e.name, leg, policy, cluster: clusterOf(e) }),
  };
}

/** The attempt's cluster (undefined when the model has one): a fresh attempt may move. */
function clusterRoute<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>, history: AttemptHistory): ClusterRoute | undefined {
  return routeCluster({
    config: ctx.config,
    routing: ctx.routing,
    isolate: ctx.isolate,
    waitUntil: ctx.waitUntil,
    client: () => ctx.client?.(),
    model: req.job.model,
    transports: req.family.transports,
    ...(req.job.routingKey !== undefined ? { routingKey: req.job.routingKey } : {}),
    exclude: history.exclude,
    never: history.never,
  });
}

function select<P, F>(ctx: PipelineContext, req: PipelineRequest<P, F>, history: AttemptHistory, route: ClusterRoute | undefined): Exclude<Selection, { kind: "none" | "unavailable" }> {
  const { model } = req.job;
  const selection = selectEngines(ctx.config, model, req.family.transports, { ...selectOptions(ctx, req, history.exclude, history.never), ...(route ? { models: route.models } : {}) });
  // A retry with nothing left to try on (the engine that failed hung, or its breaker just
  // opened): the client gets that failure, naming the engine, not "no engine".
  if (selection.kind !== "pd" && selection.kind !== "regular" && history.last) throw history.last;
  if (selection.kind === "none") throw noEngineError(ctx, model);
  if (selection.kind === "unavailable") throw unavailableError(ctx, model, selection.role, req.family.transports, route?.models);
  return selection;
}

/** Every engine of a needed pool is out: 503 naming each one and why (a few at most). */
function unavailableError(ctx: PipelineContext, model: string, role: EngineRole, transports: ReadonlySet<string>, models = ctx.routing.models): GatewayError {
  const pool = (models[model]?.[role] ?? []).filter((e) => transports.has(e.transport));
  const why = whyNotRoutable(ctx.routing, ctx.isolate.breakers, ctx.config.breaker);
  const shown = pool.slice(0, MAX_ENGINES_NAMED).map((e) => `'${e.name}': ${why(e) ?? "available again"}`);
  const more = pool.length > shown.length ? `, and ${pool.length - shown.length} more` : "";
  return new GatewayError("no_healthy_engine", 503, `No ${role} engine of model '${model}' can take traffic now (${shown.join("; ")}${more})`);
}

const MAX_ENGINES_NAMED = 4;

/** The model's decider thresholds and, when a queue limit is set, the selected engines'
 *  last reported waiting counts (read from this isolate's cache; polled in the background). */
function deciderInputs(ctx: PipelineContext, model: string, prefill: EngineConfig, decode: EngineConfig): PlanInputs["decider"] {
  const pd = Object.hasOwn(ctx.routing.models, model) ? ctx.routing.models[model]!.pd : undefined;
  if (!pd) return {};
  const out: NonNullable<PlanInputs["decider"]> = { decodeOnlyMaxPromptTokens: pd.decode_only_max_prompt_tokens };
  if (pd.prefill_queue_limit !== undefined) {
    const sources = { settings: ctx.config.loads, waitUntil: ctx.waitUntil };
    out.prefillQueueLimit = pd.prefill_queue_limit;
    out.decodeQueueLimit = pd.decode_queue_limit ?? pd.prefill_queue_limit;
    const prefillWaiting = ctx.isolate.loadReadings.waiting(prefill, sources);
    const decodeWaiting = ctx.isolate.loadReadings.waiting(decode, sources);
    if (prefillWaiting !== undefined) out.prefillWaiting = prefillWaiting;
    if (decodeWaiting !== undefined) out.decodeWaiting = decodeWaiting;
  }
  return out;
}

/** The same answer on every surface: an unknown model is a 404 naming it; a known one with
 *  no engine this request can use is a 503. */
export function noEngineError(ctx: Pick<PipelineContext, "routing">, model: string): GatewayError {
  if (!Object.hasOwn(ctx.routing.models, model)) {
    return new GatewayError("model_not_found", 404, `The model '${model}' does not exist`, undefined, "model");
  }
  return new GatewayError("no_engine_available", 503, `No engine available for model '${model}'`);
}
