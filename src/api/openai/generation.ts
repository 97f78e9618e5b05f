// POST /v1/chat/completions and /v1/completions: validate, pick engines (openai-http only),
// run the HTTP PD executor or the aggregated proxy, and answer with the engine's response
// (streamed event by event, or whole), or with an OpenAI-shaped error. One `request` event
// per client request, whatever happens.
import { routedConfig, type GatewayContext } from "../../context.js";
import { mergeKvMeta } from "../../backends/engine-info.js";
import { engineRequestHeaders, readLegBytes, relayResponseHeaders } from "../../backends/openai-http.js";
import { clientCancelledError, GatewayError } from "../../pd/errors.js";
import { fanoutWidth, type OpenAiRoute } from "../../pd/http-bodies.js";
import { errorText, UpstreamStatusError } from "../../pd/http-errors.js";
import { runHttpSequentialPd } from "../../pd/http-sequential.js";
import { pdOverrideOf } from "../../pd/run-context.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import { uuidv7 } from "../../pd/uuidv7.js";
import { selectEngines } from "../../routing/select.js";
import { withRetries } from "../../routing/attempts.js";
import { engineRoutable } from "../../routing/admission.js";
import { loadFunction } from "../../routing/engine-loads.js";
import { prefixKeyOf } from "../../routing/policies.js";
import type { EngineConfig, PolicyName } from "../../config/schema.js";
import { runAggregated } from "./aggregated.js";
import { errorResponse, sseErrorResponse, toGatewayError } from "./errors.js";
import { modelAvailability, OPENAI_TRANSPORTS } from "./models.js";
import { sseRelay, type RelayEnd } from "./relay.js";
import { parseOpenAiRequest, readBodyText, type OpenAiRequest } from "./request.js";

/** Bound on a non-streamed response the gateway holds before answering. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const MAX_REQUEST_ID_CHARS = 256;

/** The client's x-request-id (so its logs and the engines' match), else a fresh one. */
export function requestIdOf(headers: Headers): string {
  const sent = headers.get("x-request-id");
  if (sent === null || sent === "") return uuidv7();
  if (sent.length > MAX_REQUEST_ID_CHARS || !/^[\x21-\x7e]+$/.test(sent)) {
    throw new GatewayError("invalid_request", 400, `x-request-id: at most ${MAX_REQUEST_ID_CHARS} visible ASCII characters`, undefined, "x-request-id");
  }
  return sent;
}

/** The prompt as text, for prefix-affinity policies (the first message texts or prompt). */
function promptText(p: OpenAiRequest): string | undefined {
  const b = p.body;
  if (typeof b.prompt === "string") return b.prompt;
  if (Array.isArray(b.prompt)) return JSON.stringify(b.prompt).slice(0, 1024);
  if (Array.isArray(b.messages)) {
    return b.messages
      .map((m) => (typeof m === "object" && m !== null && typeof (m as { content?: unknown }).content === "string" ? (m as { content: string }).content : ""))
      .join("\n");
  }
  return undefined;
}

function unservable(gw: GatewayContext, model: string): GatewayError | undefined {
  switch (modelAvailability(routedConfig(gw), model)) {
    case "openai":
      return undefined;
    case "unknown":
      return new GatewayError("model_not_found", 404, `The model '${model}' does not exist`, undefined, "model");
    case "engine-only":
      return new GatewayError(
        "use_engine_surface",
        400,
        `The model '${model}' is served only by VllmEngine engines; use the VllmEngine Connect/gRPC-web surface (x-model: ${model}) with tokenized input`,
        undefined,
        "model",
      );
    case "incomplete":
      return new GatewayError("no_engine_available", 503, `No openai-http prefill/decode pair or regular engine is configured for model '${model}'`);
  }
}

export async function handleGeneration(gw: GatewayContext, req: Request, route: OpenAiRoute): Promise<Response> {
  const started = Date.now();
  const headers = new Headers();
  let parsed: OpenAiRequest | undefined;
  let backend: "pd" | "regular" | "none" = "none";
  let recorded = false;
  const record = (status: number, errorCode?: string) => {
    if (recorded) return;
    recorded = true;
    gw.events.emit({
      type: "request",
      model: parsed?.model ?? "",
      surface: "openai",
      endpoint: route,
      backend,
      streaming: parsed?.stream ?? false,
      status,
      ...(errorCode !== undefined ? { errorCode } : {}),
      durationMs: Date.now() - started,
    });
  };

  try {
    parsed = parseOpenAiRequest(route, await readBodyText(req, gw.config.limits.max_body_bytes), gw.config.limits.max_n);
    const p = parsed;
    const requestId = requestIdOf(req.headers);
    headers.set("x-request-id", requestId);
    const override = pdOverrideOf(req.headers, gw.config.debug.allow_pd_overrides);
    const problem = unservable(gw, p.model);
    if (problem) throw problem;
    const selectOptions = {
      models: gw.routing.models,
      load: loadFunction(gw),
      routable: engineRoutable(gw.routing, gw.config.breaker),
      routingKey: req.headers.get("x-routing-key") ?? undefined,
      prefixKey: prefixKeyOf({ text: promptText(p) }),
      onSelect: (e: EngineConfig, leg: "prefill" | "decode" | "regular", policy: PolicyName) =>
        gw.events.emit({ type: "engine_selection", model: p.model, engine: e.name, leg, policy }),
    };
    // A failure before anything reached the client is retried on a new selection (pd-reference
    // 6: the whole attempt, new bodies); the engine that failed is avoided next time.
    const { leg, response, via } = await withRetries(gw, async (exclude, attempt) => {
      // A retry is a new engine request: an engine may still hold state (a pinned handoff,
      // a request being torn down) under the first attempt's id.
      const legHeaders = engineRequestHeaders(req.headers, attempt === 1 ? requestId : `${requestId}-${attempt}`, p.stream);
      const selection = selectEngines(gw.config, p.model, OPENAI_TRANSPORTS, { ...selectOptions, exclude });
      if (selection.kind === "unavailable") {
        throw new GatewayError("no_healthy_engine", 503, `No ${selection.role} engine of model '${p.model}' can take traffic now`);
      }
      if (selection.kind === "none") throw new GatewayError("no_engine_available", 503, `No engine available for model '${p.model}'`);
      if (selection.kind === "regular") {
        backend = "regular";
        try {
          const r = await runAggregated({
            route, clientText: p.text, headers: legHeaders, model: p.model, engine: selection.engine,
            clientSignal: gw.clientSignal, waitUntil: gw.waitUntil, events: gw.events,
          });
          return { ...r, via: "engine" as const };
        } catch (err) {
          exclude.add(selection.engine.name);
          throw err;
        }
      }
      backend = "pd";
      try {
        const r = await runHttpSequentialPd({
          route,
          clientText: p.text,
          body: p.body,
          requestId: legHeaders.get("x-request-id")!,
          headers: legHeaders,
          model: p.model,
          // No GetServerInfo over HTTP: the connector comes from the engine's config entry.
          prefill: { name: selection.prefill.name, url: selection.prefill.url, meta: mergeKvMeta(selection.prefill, undefined) },
          decode: { name: selection.decode.name, url: selection.decode.url, meta: mergeKvMeta(selection.decode, undefined) },
          clientSignal: gw.clientSignal,
          waitUntil: gw.waitUntil,
          events: gw.events,
          deferredAbortMaxMs: gw.config.pd.deferred_abort_max_ms,
          mintTransferId: () => `xfer-${uuidv7()}`,
          override,
          onDecision: (skipped) => headers.set("x-pd-prefill", prefillDecisionHeader(skipped)),
        });
        return { leg: r.leg, response: r.response, via: "decode" as const };
      } catch (err) {
        if (err instanceof GatewayError) exclude.add(err.code.startsWith("prefill_") ? selection.prefill.name : selection.decode.name);
        throw err;
      }
    });

    const out = relayResponseHeaders(response.headers);
    headers.forEach((v, k) => out.set(k, v));
    if (p.stream) {
      const body = sseRelay(leg, {
        leg: via,
        clientSignal: gw.clientSignal,
        now: Date.now,
        onEnd: (end) => {
          record(end.status, end.errorCode);
          if (end.outcome === "completed") emitStreamComplete(gw, p, started, end);
        },
      });
      return new Response(body, { status: response.status, headers: out });
    }
    let bytes: Uint8Array;
    try {
      bytes = await readLegBytes(leg, MAX_RESPONSE_BYTES);
    } catch (err) {
      leg.close();
      if (gw.clientSignal.aborted) throw clientCancelledError();
      throw new GatewayError(`${via}_read_failed`, 502, `${via === "decode" ? "Decode" : "Engine"} response could not be read: ${errorText(err)}`);
    }
    if (gw.clientSignal.aborted) throw clientCancelledError();
    record(response.status);
    return new Response(bytes, { status: response.status, headers: out });
  } catch (err) {
    const e = toGatewayError(err);
    record(e.status, e.code);
    return parsed?.stream && e instanceof UpstreamStatusError ? sseErrorResponse(e, headers) : errorResponse(e, headers);
  }
}

function emitStreamComplete(gw: GatewayContext, p: OpenAiRequest, started: number, end: RelayEnd): void {
  const s = end.stats;
  const now = Date.now();
  const outputTokens = s.usage?.completionTokens ?? s.outputPieces;
  const perSequence = outputTokens / fanoutWidth(p.route, p.body);
  const tpotMs =
    s.firstEventAt !== undefined && s.lastEventAt !== undefined && perSequence > 1
      ? (s.lastEventAt - s.firstEventAt) / (perSequence - 1)
      : undefined;
  gw.events.emit({
    type: "stream_complete",
    model: p.model,
    surface: "openai",
    endpoint: p.route,
    ...(s.firstEventAt !== undefined ? { ttftMs: s.firstEventAt - started } : {}),
    ...(tpotMs !== undefined ? { tpotMs } : {}),
    generationMs: now - started,
    ...(s.usage?.promptTokens !== undefined ? { inputTokens: s.usage.promptTokens } : {}),
    outputTokens,
  });
}
