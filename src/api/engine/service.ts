// The VllmEngine service the gateway serves to clients: Generate runs through engine
// selection and the sequential PD executor; Abort reaches both legs; the info RPCs proxy to
// a decode engine; HealthCheck answers for the gateway.
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { GenerateRequest, GenerateResponse, VllmEngine } from "../../gen/vllm_engine_pb.js";
import { gatewayContextKey, routedConfig, type GatewayContext } from "../../context.js";
import { engineKvMeta, mergeKvMeta } from "../../backends/engine-info.js";
import { enginesServing, trackInFlight } from "../../backends/in-flight.js";
import { vllmEngineClient } from "../../backends/vllm-engine.js";
import { checkClientRequest } from "../../pd/client-request.js";
import { GatewayError, httpStatusForCode } from "../../pd/errors.js";
import { runGrpcSequentialPd } from "../../pd/grpc-sequential.js";
import { pdOverrideOf } from "../../pd/run-context.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import { sendAbort } from "../../pd/engine-abort.js";
import { uuidv7 } from "../../pd/uuidv7.js";
import { defaultModel, selectEngines } from "../../routing/select.js";
import type { EngineConfig } from "../../config/schema.js";
import { errorCodeOf, toConnectError } from "./errors.js";
import { checkEngineHealth } from "./health.js";
import { openEngineStream } from "../../pd/engine-stream.js";
import { withRetries } from "../../routing/attempts.js";
import { engineRoutable } from "../../routing/admission.js";
import { loadFunction } from "../../routing/engine-loads.js";
import { prefixKeyOf } from "../../routing/policies.js";
import { StreamTiming } from "./stream-timing.js";

/** Engines reachable with VllmEngine clients from a Worker. */
export const ENGINE_TRANSPORTS: ReadonlySet<string> = new Set(["connect", "grpc-web"]);

function gatewayOf(ctx: HandlerContext): GatewayContext {
  const gw = ctx.values.get(gatewayContextKey);
  if (!gw) throw new ConnectError("gateway context missing", Code.Internal);
  return gw;
}

function modelOf(gw: GatewayContext, ctx: HandlerContext): string {
  const named = ctx.requestHeader.get("x-model");
  if (named) return named;
  const model = defaultModel(routedConfig(gw), ENGINE_TRANSPORTS);
  if (!model) {
    throw new GatewayError("model_required", 400, "x-model: header required, more than one model is configured", Code.InvalidArgument, "x-model");
  }
  return model;
}

async function* generate(req: GenerateRequest, ctx: HandlerContext): AsyncIterable<GenerateResponse> {
  const gw = gatewayOf(ctx);
  const started = Date.now();
  let model = "";
  let backend: "pd" | "regular" | "none" = "none";
  let status = 200;
  let errorCode: string | undefined;
  let untrack = () => {};
  const timing = new StreamTiming(started);
  let completed = false;
  try {
    model = modelOf(gw, ctx);
    const checked = checkClientRequest(req, { maxN: gw.config.limits.max_n }, () => `gen-${uuidv7()}`);
    if (!checked.ok) throw new GatewayError("invalid_request", 400, checked.message, Code.InvalidArgument, checked.field);
    const request = checked.request;
    const select = (exclude: ReadonlySet<string>) => {
      const selection = selectEngines(gw.config, model, ENGINE_TRANSPORTS, {
        models: gw.routing.models,
        load: loadFunction(gw),
        routable: engineRoutable(gw.routing, gw.config.breaker),
        exclude,
        onSelect: (e, leg, policy) => gw.events.emit({ type: "engine_selection", model, engine: e.name, leg, policy }),
        routingKey: ctx.requestHeader.get("x-routing-key") ?? undefined,
        prefixKey: prefixKeyOf(request.input.case === "tokenized" ? { tokens: request.input.value.inputIds } : { text: request.input.value }),
      });
      if (selection.kind === "none") {
        throw new GatewayError("model_not_found", 404, `No engine available for model '${model}'`, Code.NotFound, "x-model");
      }
      if (selection.kind === "unavailable") {
        throw new GatewayError("no_healthy_engine", 503, `No ${selection.role} engine of model '${model}' can take traffic now`, Code.Unavailable);
      }
      return selection;
    };
    const override = pdOverrideOf(ctx.requestHeader, gw.config.debug.allow_pd_overrides);
    const result = await withRetries(gw, async (exclude) => {
      const selection = select(exclude);
      untrack();
      if (selection.kind === "regular") {
        backend = "regular";
        exclude.add(selection.engine.name);
        untrack = trackInFlight(request.requestId, [{ name: selection.engine.name, client: vllmEngineClient(selection.engine) }]);
        return openAggregated(gw, model, selection.engine, request);
      }
      backend = "pd";
      const prefillClient = vllmEngineClient(selection.prefill);
      const decodeClient = vllmEngineClient(selection.decode);
      const prefill = { name: selection.prefill.name, client: prefillClient, meta: await engineKvMeta(selection.prefill, prefillClient, gw.config.pd.engine_info_ttl_ms) };
      const decode = { name: selection.decode.name, client: decodeClient, meta: mergeKvMeta(selection.decode, undefined) };
      untrack = trackInFlight(request.requestId, [prefill, decode]);
      try {
        return await runGrpcSequentialPd({
          request,
          model,
          surface: "engine",
          prefill,
          decode,
          // vLLM has no encode stage of its own: a model with an encode pool is EPD-configured, and
          // its prefill engine may be where embeddings land, so the prefill leg is kept (conservative).
          hasEncodeAssignments: selection.hasEncodeEngines,
          clientSignal: gw.clientSignal,
          waitUntil: gw.waitUntil,
          events: gw.events,
          deferredAbortMaxMs: gw.config.pd.deferred_abort_max_ms,
          prefillTimeoutMs: gw.config.pd.prefill_timeout_ms,
          firstFrameTimeoutMs: gw.config.pd.first_frame_timeout_ms,
          mintTransferId: () => `xfer-${uuidv7()}`,
          override,
          onDecision: (skipped) => ctx.responseHeader.set("x-pd-prefill", prefillDecisionHeader(skipped)),
        });
      } catch (err) {
        // Avoid the leg that failed on the next attempt.
        if (err instanceof GatewayError) exclude.add(err.code.startsWith("prefill_") ? prefill.name : decode.name);
        throw err;
      }
    });
    for await (const frame of result.stream) {
      timing.observe(frame);
      yield frame;
    }
    completed = true;
  } catch (err) {
    const ce = toConnectError(err);
    status = err instanceof GatewayError ? err.status : httpStatusForCode(ce.code);
    errorCode = errorCodeOf(err);
    throw ce;
  } finally {
    untrack();
    if (gw.clientSignal.aborted && errorCode === undefined) {
      status = 499;
      errorCode = "client_cancelled";
    }
    gw.events.emit({
      type: "request",
      model,
      surface: "engine",
      endpoint: "generate",
      backend,
      streaming: req.stream,
      status,
      ...(errorCode !== undefined ? { errorCode } : {}),
      durationMs: Date.now() - started,
    });
    if (completed && req.stream) gw.events.emit(timing.event({ model, surface: "engine", endpoint: "generate" }));
  }
}

/** One leg straight through, for models served by regular (non-PD) engines. */
function openAggregated(gw: GatewayContext, model: string, engine: EngineConfig, request: GenerateRequest) {
  return openEngineStream({
    engine: { name: engine.name, client: vllmEngineClient(engine) },
    request,
    leg: "regular",
    model,
    events: gw.events,
    clientSignal: gw.clientSignal,
    waitUntil: gw.waitUntil,
    handedOff: false,
    deferredAbortMaxMs: 0,
    firstFrameTimeoutMs: gw.config.pd.first_frame_timeout_ms,
    startError: { code: "engine_failed_to_start", prefix: "Engine failed to start", timeoutCode: "engine_timeout" },
  }).then((stream) => ({ stream }));
}

async function abort(req: { requestIds: string[] }, ctx: HandlerContext) {
  const gw = gatewayOf(ctx);
  const sends: Promise<void>[] = [];
  for (const id of req.requestIds) {
    const engines = enginesServing(id) ?? allEngines(gw, ctx);
    for (const e of engines) sends.push(sendAbort(e.client, id, e.name));
  }
  await Promise.all(sends);
  return {};
}

/** An Abort for a request this isolate does not know goes to every VllmEngine engine of the
 *  model: another isolate may be serving it, and engines ignore unknown ids. */
function allEngines(gw: GatewayContext, ctx: HandlerContext) {
  const named = ctx.requestHeader.get("x-model");
  const routed = gw.routing.models;
  const models = named ? [named] : Object.keys(routed);
  const out: { name: string; client: ReturnType<typeof vllmEngineClient> }[] = [];
  for (const m of models) {
    const pools = Object.hasOwn(routed, m) ? routed[m] : undefined;
    if (!pools) continue;
    for (const e of [...pools.prefill, ...pools.decode, ...pools.regular]) {
      if (ENGINE_TRANSPORTS.has(e.transport)) out.push({ name: e.name, client: vllmEngineClient(e) });
    }
  }
  return out;
}

/** The engine that answers info RPCs for a model: a decode engine, or a regular one. */
function infoEngine(gw: GatewayContext, ctx: HandlerContext): EngineConfig {
  const model = modelOf(gw, ctx);
  const pools = Object.hasOwn(gw.routing.models, model) ? gw.routing.models[model] : undefined;
  const engine = [...(pools?.decode ?? []), ...(pools?.regular ?? [])].find((e) => ENGINE_TRANSPORTS.has(e.transport));
  if (!engine) throw toConnectError(new GatewayError("model_not_found", 404, `No engine available for model '${model}'`, Code.NotFound, "x-model"));
  return engine;
}

function proxied<K extends "getModelInfo" | "getServerInfo" | "getLoads">(method: K) {
  return async (req: Parameters<ServiceImpl<typeof VllmEngine>[K]>[0], ctx: HandlerContext) => {
    const gw = gatewayOf(ctx);
    try {
      const client = vllmEngineClient(infoEngine(gw, ctx));
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return await (client[method] as any)(req, { signal: ctx.signal, timeoutMs: 10_000 });
    } catch (err) {
      throw toConnectError(err);
    }
  };
}

export const engineService: Partial<ServiceImpl<typeof VllmEngine>> = {
  generate,
  abort,
  healthCheck: async (_req, ctx) => checkEngineHealth(gatewayOf(ctx), ENGINE_TRANSPORTS),
  getModelInfo: proxied("getModelInfo"),
  getServerInfo: proxied("getServerInfo"),
  getLoads: proxied("getLoads"),
};
