// The one executor (ARCHITECTURE decision 11): one attempt of a generation job over any leg
// transport. PD: plan, run or skip prefill, hand decode its KV, open decode to its first
// frame. Aggregated mode (a regular engine) is the same executor without a prefill leg.
import { GatewayError } from "../core/errors.js";
import { LegFailure, type LegSpec, type LegTransport } from "../core/leg-transport.js";
import type { EngineKvMeta } from "../core/kv-meta.js";
import type { EngineTarget, SkipReason } from "../core/types.js";
import type { EventSink } from "../metrics/events.js";
import { drainPrefill, endedByClient, openLeg, type LegContext, type LegStream, type OpenLegOptions } from "./leg.js";
import { decodeFailoverAllowed } from "./failover.js";
import { legTimeoutMs } from "./deadline.js";
import { planDecodeKv, planPd, type PlanInputs } from "./plan.js";
import type { GenerationJob } from "./job.js";

export type { GenerationJob } from "./job.js";

export interface JobEngine {
  target: EngineTarget;
  meta: EngineKvMeta;
}

/** The engines of one attempt: a PD pair, or one regular engine (no prefill). */
export interface AttemptEngines {
  prefill?: JobEngine;
  decode: JobEngine;
  /** EPD: the model has encode engines, whose output lands on the prefill engine. */
  hasEncodeAssignments: boolean;
  /** Another decode engine of the pool that `tried` does not name, for decode failover. */
  anotherDecode?(tried: ReadonlySet<string>): Promise<JobEngine | undefined>;
  /** The model's decider thresholds and the selected engines' reported queues. */
  decider?: PlanInputs["decider"];
}

export interface PdTimeouts {
  prefillTimeoutMs: number;
  firstFrameTimeoutMs: number;
  deferredAbortMaxMs: number;
  /** The request's deadline (epoch ms): each leg's timeout is cut to what is left of it. */
  deadlineAt?: number;
}

export interface ExecutorContext extends LegContext {
  events: EventSink;
  timeouts: PdTimeouts;
  mintTransferId(): string;
  /** Told the prefill decision as soon as it is made (for the x-pd-prefill header). */
  onDecision?(skipReason: SkipReason | undefined): void;
  /** Log the path taken (config debug.log_paths). */
  logPaths?: boolean;
  now?: () => number;
}

export interface AttemptResult<F> {
  prefill: "ran" | "skipped" | "none";
  stream: LegStream<F>;
}

export async function runAttempt<P, F>(
  t: LegTransport<P, F>,
  job: GenerationJob<P>,
  engines: AttemptEngines,
  requestId: string,
  ctx: ExecutorContext,
): Promise<AttemptResult<F>> {
  if (!engines.prefill) {
    const stream = await openLeg(t, engines.decode.target, job.payload, { leg: "regular", requestId }, ctx, streamLegOptions(ctx, false));
    return { prefill: "none", stream };
  }
  return runPd(t, job, engines.prefill, engines, requestId, ctx);
}

async function runPd<P, F>(
  t: LegTransport<P, F>,
  job: GenerationJob<P>,
  prefill: JobEngine,
  engines: AttemptEngines,
  requestId: string,
  ctx: ExecutorContext,
): Promise<AttemptResult<F>> {
  const now = ctx.now ?? Date.now;
  const plan = planPd({
    fanout: job.fanout,
    hasEncodeAssignments: engines.hasEncodeAssignments,
    hasMmInputs: job.hasMmInputs,
    prefill: prefill.meta,
    decode: engines.decode.meta,
    traits: t.traits,
    mintTransferId: ctx.mintTransferId,
    ...(job.override !== undefined ? { override: job.override } : {}),
    decider: {
      ...engines.decider,
      // Worked out only when a threshold is set (an estimate reads the whole prompt).
      ...((engines.decider?.decodeOnlyMaxPromptTokens ?? 0) > 0 ? { promptTokens: job.promptTokens().count } : {}),
    },
  });
  ctx.onDecision?.(plan.skipReason);
  const endedBefore = endedByClient(ctx);
  if (endedBefore) throw endedBefore;

  let harvested: string | undefined;
  let prefillMs: number | undefined;
  let kvWindowStart = 0;
  if (plan.prefill) {
    const t0 = now();
    harvested = await drainPrefill(t, prefill.target, job.payload, { ...plan.prefill, requestId }, ctx, legTimeoutMs(ctx.timeouts.prefillTimeoutMs, ctx.timeouts.deadlineAt, t0));
    prefillMs = now() - t0;
    kvWindowStart = now();
  } else if (ctx.logPaths) {
    console.debug(JSON.stringify({ msg: "prefill leg skipped; dispatching to decode only", reason: plan.skipReason, requestId, fanout: job.fanout }));
  }

  const kv = planDecodeKv(plan, t.traits, harvested);
  if (kv.kvTransferFailure) {
    ctx.events.emit({ type: "kv_transfer_failure", model: job.model, prefillEngine: prefill.target.name });
    console.warn(JSON.stringify({ msg: "prefill returned no kv_transfer_params; decode will recompute the prompt locally", requestId, engine: prefill.target.name }));
  }
  if (kv.mooncakeWithoutTypedForm) {
    console.warn(JSON.stringify({ msg: "Mooncake prefill engine without an engine id: this transport has no typed host/port form; decode recomputes the prompt locally", requestId, engine: prefill.target.name }));
  }
  if (kv.missingHandoff) {
    throw new GatewayError("pd_decode_missing_kv_transfer_params", 502, `Prefill engine '${prefill.target.name}' returned no KV handoff for a multimodal request whose decode leg has no pixels`).from(prefill.target.name);
  }
  const handedOff = kv.injection !== "none";
  // Gone (or aborted) after prefill without a handoff: nothing to release, so decode is not
  // sent. With one, decode goes out and its abort waits for its first frame (leg.ts).
  const endedAfter = handedOff ? undefined : endedByClient(ctx);
  if (endedAfter) throw endedAfter;

  const { stream, decode } = await openDecode(t, job, engines, { ...kv.spec, requestId }, handedOff, ctx);
  ctx.events.emit({
    type: "pd_decision",
    model: job.model,
    surface: job.surface,
    connectorMode: plan.mode.kind,
    prefill: plan.skip ? "skipped" : "ran",
    ...(plan.skipReason !== undefined ? { skipReason: plan.skipReason } : {}),
    kvInjection: kv.injection,
    n: job.fanout,
    prefillEngine: prefill.target.name,
    decodeEngine: decode.target.name,
    ...(prefillMs !== undefined ? { prefillMs } : {}),
    ...(handedOff ? { kvTransferMs: now() - kvWindowStart } : {}),
    ...(decode.target.cluster !== undefined ? { cluster: decode.target.cluster } : {}),
  });
  return { prefill: plan.skip ? "skipped" : "ran", stream };
}

/** Opens decode. With a handoff given, a failure that decode most likely never admitted goes
 *  to another decode engine with the same handoff and request id (issue 15) instead of a
 *  pipeline retry, which would run prefill again and pin a second handoff. When none is left
 *  the error is final: the handoff waits for its lease. */
async function openDecode<P, F>(
  t: LegTransport<P, F>,
  job: GenerationJob<P>,
  engines: AttemptEngines,
  spec: LegSpec,
  handedOff: boolean,
  ctx: ExecutorContext,
): Promise<{ stream: LegStream<F>; decode: JobEngine }> {
  const tried = new Set<string>();
  for (let decode: JobEngine | undefined = engines.decode; ; ) {
    tried.add(decode.target.name);
    try {
      const stream = await openLeg(t, decode.target, job.payload, spec, ctx, streamLegOptions(ctx, handedOff));
      return { stream, decode };
    } catch (err) {
      if (!handedOff || !(err instanceof GatewayError)) throw err;
      const failover = err.cause instanceof LegFailure && decodeFailoverAllowed(err.cause);
      const next = failover && !ctx.clientSignal.aborted ? await engines.anotherDecode?.(tried) : undefined;
      if (!next) {
        err.retryable = false;
        throw err;
      }
      console.warn(JSON.stringify({ msg: "decode failover: same handoff, another decode engine", requestId: spec.requestId, failed: decode.target.name, next: next.target.name, code: err.code }));
      decode = next;
    }
  }
}

/** The abort and timeout rules of a streamed (decode or regular) leg starting now. */
function streamLegOptions(ctx: ExecutorContext, handedOff: boolean): OpenLegOptions {
  const firstFrameTimeoutMs = legTimeoutMs(ctx.timeouts.firstFrameTimeoutMs, ctx.timeouts.deadlineAt, (ctx.now ?? Date.now)());
  return { handedOff, deferredAbortMaxMs: ctx.timeouts.deferredAbortMaxMs, firstFrameTimeoutMs };
}
