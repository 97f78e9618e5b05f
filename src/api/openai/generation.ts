// POST /v1/chat/completions and /v1/completions: a thin adapter. A model served by VllmEngine
// engines goes to engine-generation.ts (the gateway tokenizes). Otherwise the client's JSON becomes a
// generation job; the pipeline (routing/pipeline.ts) selects, runs and retries it; the
// engine's answer goes back as it comes (event by event) or whole. One `request` event per
// client request, whatever happens.
import { routedConfig, type GatewayContext } from "../../context.js";
import { concatBytes } from "../../core/body.js";
import { clientCancelledError, errorText, GatewayError, UpstreamStatusError } from "../../core/errors.js";
import { uuidv7 } from "../../core/ids.js";
import { optional } from "../../core/optional.js";
import { relayResponseHeaders } from "../../backends/openai-http.js";
import type { OpenAiRoute } from "../../backends/openai-bodies.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import { estimatePromptTokens } from "../../pd/prompt-tokens.js";
import type { LegStream } from "../../pd/leg.js";
import { tpotMs } from "../../metrics/tpot.js";
import { engineRequestIdFor } from "../../routing/client-requests.js";
import { openAiHttpFamily } from "../../routing/families.js";
import { noEngineError, runPipeline } from "../../routing/pipeline.js";
import { pdOverrideOf } from "../pd-override.js";
import { openAiErrorResponse, sseErrorResponse } from "../../errors/openai.js";
import { toGatewayError } from "../../errors/render.js";
import { modelAvailability } from "./models.js";
import { sseRelay, type RelayEnd } from "./relay.js";
import { refuseBeyondHttpContext } from "./http-context.js";
import { fanoutWidth, parseOpenAiRequest, promptText, type OpenAiRequest } from "./request.js";
import { readBodyText } from "../../core/body-text.js";

/** The tokenizing path (and the tokenizer and template libraries under it) loads on the first
 *  request to a model served by VllmEngine engines, not at the isolate's start-up. */
let engineGeneration: Promise<typeof import("./engine-generation.js")> | undefined;
const loadEngineGeneration = () => (engineGeneration ??= import("./engine-generation.js"));

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

/** How the model is served on this surface: relayed to openai-http engines, tokenized by the
 *  gateway for VllmEngine engines, or not at all (a 404 / 503 naming it). */
function servingPath(gw: GatewayContext, model: string): "openai-http" | "vllm-engine" {
  switch (modelAvailability(routedConfig(gw), model)) {
    case "openai":
      return "openai-http";
    case "engine-only":
      return "vllm-engine";
    default:
      throw noEngineError(gw, model);
  }
}

export async function handleGeneration(gw: GatewayContext, req: Request, route: OpenAiRoute): Promise<Response> {
  const started = Date.now();
  const headers = new Headers();
  let parsed: OpenAiRequest | undefined;
  const seen: { backend: "pd" | "regular" | "none" } = { backend: "none" };
  let recorded = false;
  const record = (status: number, errorCode?: string) => {
    if (recorded) return;
    recorded = true;
    gw.events.emit({
      type: "request",
      model: parsed?.model ?? "",
      surface: "openai",
      endpoint: route,
      backend: seen.backend,
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
    if (servingPath(gw, p.model) === "vllm-engine") {
      return await (await loadEngineGeneration()).handleEngineGeneration(gw, p, route, {
        requestId,
        headers,
        override,
        started,
        onBackend: (b) => (seen.backend = b),
        record,
      });
    }
    refuseBeyondHttpContext(gw, p);
    const { stream } = await runPipeline(gw.pipeline(p.model), {
      job: {
        model: p.model,
        surface: "openai",
        payload: { route, text: p.text, body: p.body, stream: p.stream, clientHeaders: req.headers },
        fanout: fanoutWidth(route, p.body),
        // Both HTTP legs get the full body: multimodal content never depends on prefill.
        hasMmInputs: false,
        promptTokens: () => (isTokenIds(p.body.prompt) ? p.body.prompt.length : estimatePromptTokens(promptText(p, Infinity) ?? "")),
        ...optional("override", override),
      },
      family: openAiHttpFamily,
      clientRequestId: requestId,
      requestId: engineRequestIdFor(gw.owner, requestId),
      owner: gw.owner,
      ...optional("routingKey", req.headers.get("x-routing-key") ?? undefined),
      prefixText: () => ({ text: promptText(p) }),
      onDecision: (reason) => headers.set("x-pd-prefill", prefillDecisionHeader(reason)),
      onBackend: (b) => (seen.backend = b),
      onCluster: (cluster) => headers.set("x-gateway-cluster", cluster),
    });

    const out = relayResponseHeaders(stream.headers());
    // The gateway's own headers: the request id and the PD decision (no iteration needed).
    out.set("x-request-id", requestId);
    const decision = headers.get("x-pd-prefill");
    if (decision !== null) out.set("x-pd-prefill", decision);
    const cluster = headers.get("x-gateway-cluster");
    if (cluster !== null) out.set("x-gateway-cluster", cluster);
    if (p.stream) {
      const body = await sseRelay(stream, {
        native: gw.routing.models[p.model]?.sse_relay === "native",
        waitUntil: gw.waitUntil,
        ...optional("engine", stream.engine),
        maxEventBytes: gw.config.bounds.max_sse_event_bytes,
        leg: seen.backend === "regular" ? "engine" : "decode",
        clientSignal: gw.clientSignal,
        now: Date.now,
        onEnd: (end) => {
          record(end.status, end.errorCode);
          if (end.outcome === "completed") emitStreamComplete(gw, p, started, end);
        },
      });
      return new Response(body, { status: 200, headers: out });
    }
    const body = await passThrough(gw, stream);
    record(200);
    return new Response(body, { status: 200, headers: out });
  } catch (err) {
    const e = toGatewayError(err, "OpenAI surface");
    record(e.status, e.code);
    return parsed?.stream && e instanceof UpstreamStatusError ? sseErrorResponse(e, headers) : openAiErrorResponse(e, headers);
  }
}

function isTokenIds(prompt: unknown): prompt is number[] {
  return Array.isArray(prompt) && prompt.length > 0 && prompt.every((x) => typeof x === "number");
}

/** A non-streamed answer as the engine sent it: the engine's own body handed to the client
 *  untouched (LegStream.detach; over HTTP the leg's first frame is the answer's head, which
 *  vLLM sends with the finished answer), so relaying it costs no JS at all; the runtime
 *  passes a client's cancel on to the engine's connection. Where the leg cannot hand its
 *  body over, it is read whole (bounded). */
async function passThrough(gw: GatewayContext, stream: LegStream<Uint8Array>): Promise<ReadableStream<Uint8Array> | Uint8Array> {
  const first = await stream.next(); // the frame the pipeline already read: it cannot fail now
  if (first.done) return new Uint8Array(0);
  const detached = first.value.byteLength === 0 ? stream.detach?.() : undefined;
  if (!detached) return readWhole(gw, stream, first.value);
  // The engine has answered: its load and the leg end here; the bytes are the runtime's.
  detached.end("completed");
  return detached.body;
}

/** A non-streamed answer, whole (bounded), read straight off the leg after its first frame. */
async function readWhole(gw: GatewayContext, stream: LegStream<Uint8Array>, first: Uint8Array): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [first];
  let size = first.byteLength;
  try {
    for (;;) {
      const r = await stream.next();
      if (r.done) break;
      size += r.value.byteLength;
      if (size > MAX_RESPONSE_BYTES) throw new GatewayError("response_too_large", 502, `engine response: body is larger than ${MAX_RESPONSE_BYTES} bytes`);
      chunks.push(r.value);
    }
  } catch (err) {
    stream.cancel();
    if (gw.clientSignal.aborted) throw clientCancelledError();
    if (err instanceof GatewayError) throw err;
    throw new GatewayError("response_too_large", 502, `engine response: ${errorText(err)}`);
  }
  return concatBytes(chunks, size);
}

function emitStreamComplete(gw: GatewayContext, p: OpenAiRequest, started: number, end: RelayEnd): void {
  const s = end.stats;
  const outputTokens = s.usage?.completionTokens ?? s.outputPieces;
  const tpot = s.firstEventAt !== undefined && s.lastEventAt !== undefined ? tpotMs(s.firstEventAt, s.lastEventAt, outputTokens, fanoutWidth(p.route, p.body)) : undefined;
  gw.events.emit({
    type: "stream_complete",
    model: p.model,
    surface: "openai",
    endpoint: p.route,
    ...(s.firstEventAt !== undefined ? { ttftMs: s.firstEventAt - started } : {}),
    ...(tpot !== undefined ? { tpotMs: tpot } : {}),
    generationMs: Date.now() - started,
    ...(s.usage?.promptTokens !== undefined ? { inputTokens: s.usage.promptTokens } : {}),
    outputTokens,
  });
}
