// OpenAI chat/completions for a model served by VllmEngine engines (ARCHITECTURE decision 12):
// the gateway tokenizes. Build the job, run the pipeline, render the result, like
// api/engine/generate.ts: the body becomes a job (api/job.ts) whose payload is a
// GenerateRequest with token ids and SamplingParams, everything the gateway can
// refuse is refused before any engine work (the context window included), the pipeline
// selects, runs (prefill skipped for n > 1) and retries, and the frames go back as OpenAI JSON
// or SSE built by the gateway's detokenizer.
import { create } from "@bufbuild/protobuf";
import { routedConfig, type GatewayContext } from "../../context.js";
import { GatewayError } from "../../core/errors.js";
import { optional } from "../../core/optional.js";
import type { EngineConfig } from "../../config/schema.js";
import { GenerateRequestSchema, type GenerateResponse } from "../../gen/vllm_engine_pb.js";
import { TokenizerBundles, type ModelTokenizer } from "../../backends/tokenizer-bundles.js";
import type { IsolateState } from "../../routing/isolate.js";
import type { LegStream } from "../../pd/leg.js";
import { prefillDecisionHeader } from "../../pd/skip.js";
import { VLLM_ENGINE_TRANSPORTS, vllmEngineFamily } from "../../routing/families.js";
import { runPipeline } from "../../routing/pipeline.js";
import { planOutput, type OutputPlan } from "../../parsers/output-plan.js";
import { resolveParsers } from "../../parsers/resolve.js";
import { combineConstraints, ToolRequestError } from "../../parsers/tool-choice.js";
import { SamplingParamError } from "../../tokenizer/errors.js";
import { OpenAiResponseBuilder } from "../../tokenizer/openai-frames.js";
import { samplingPlan, type SamplingPlan } from "../../tokenizer/sampling.js";
import { contextWindowError, maxTokensField } from "../context-window.js";
import { chatPrompt, completionPrompt, type EnginePrompt } from "./engine-prompt.js";
import { refuseUnsupportedFields } from "./engine-fields.js";
import { engineJsonResult, engineSseBody, type EngineStreamEnd } from "./engine-response.js";
import { buildJob } from "../job.js";
import type { OutputStats, RequestMetrics } from "../request-metrics.js";
import type { OpenAiRequest } from "./request.js";

export interface EngineGenerationScope {
  requestId: string;
  /** Response headers set so far (x-request-id); x-pd-prefill is added here. */
  headers: Headers;
  /** The request's metrics writer: its `request` (and `stream_complete`) event, once. */
  metrics: RequestMetrics;
}

/** The model's VllmEngine engines in the order to ask for its tokenizer: the engines that
 *  generate the tokens we detokenize first. */
export function tokenizerEngines(gw: GatewayContext, model: string): EngineConfig[] {
  const pools = routedConfig(gw).models[model];
  if (!pools) return [];
  return [...pools.regular, ...pools.decode, ...pools.prefill].filter((e) => VLLM_ENGINE_TRANSPORTS.has(e.transport));
}

export async function handleEngineGeneration(gw: GatewayContext, p: OpenAiRequest, clientHeaders: Headers, s: EngineGenerationScope): Promise<Response> {
  const { job, plan, tokenizer, output } = await engineJob(gw, p, clientHeaders, s.requestId);
  s.metrics.forJob(job);
  const { stream } = await runPipeline(gw.pipeline(p.model), {
    job,
    family: vllmEngineFamily(gw.isolate, gw.config.pd.engine_info_ttl_ms),
    onDecision: (reason) => s.headers.set("x-pd-prefill", prefillDecisionHeader(reason)),
    onBackend: (b) => s.metrics.backend(b),
    onCluster: (cluster) => s.headers.set("x-gateway-cluster", cluster),
  });
  const chat = p.route === "/v1/chat/completions";
  const head = { api: chat ? "chat" : "completions", id: `${chat ? "chatcmpl" : "cmpl"}-${s.requestId}`, created: Math.floor(Date.now() / 1000), model: p.model } as const;
  return render(gw, stream, new OpenAiResponseBuilder(head, plan, tokenizer, output), plan, s);
}

/** The model's tokenizer and template, as its engines serve them (count_tokens reads it too). */
export function modelTokenizer(gw: GatewayContext, model: string): Promise<ModelTokenizer> {
  return tokenizersOf(gw.isolate).get({
    model,
    engines: tokenizerEngines(gw, model),
    ...optional("override", Object.hasOwn(gw.config.models, model) ? gw.config.models[model]!.tokenizer : undefined),
    waitUntil: gw.waitUntil,
  });
}

/** The job: the prompt rendered and tokenized with the engine's tokenizer, SamplingParams
 *  planned, everything the gateway can refuse refused (the context window included). */
async function engineJob(gw: GatewayContext, p: OpenAiRequest, clientHeaders: Headers, requestId: string) {
  const chat = p.route === "/v1/chat/completions";
  refuseUnsupportedFields(chat ? "chat" : "completions", p.body);
  const tok = await modelTokenizer(gw, p.model);
  const maxPromptBytes = Object.hasOwn(gw.config.bounds.max_prompt_bytes, p.model) ? gw.config.bounds.max_prompt_bytes[p.model] : undefined;
  const limits = maxPromptBytes === undefined ? {} : { maxPromptBytes };
  const prompt = chat ? await chatPrompt(p, tok, limits) : await completionPrompt(p, tok, limits);
  const plan = planOf(chat, p.body, prompt, tok, gw.config.limits.max_n);
  const output = chat ? outputPlanOf(gw, p, tok) : undefined;
  // A tool constraint wins over response_format / structured outputs (docs/tools.md).
  if (output) plan.samplingParams.constraint = combineConstraints(output.constraint, plan.samplingParams.constraint);
  const job = buildJob(gw, {
    model: p.model,
    surface: "openai",
    endpoint: p.route,
    payload: create(GenerateRequestSchema, {
      requestId,
      input: { case: "tokenized", value: { originalText: prompt.text, inputIds: prompt.ids } },
      samplingParams: plan.samplingParams,
      stream: plan.stream,
    }),
    prompt: () => ({ tokens: prompt.ids }),
    fanout: plan.n,
    hasMmInputs: false,
    streamed: plan.stream,
    clientRequestId: requestId,
    headers: clientHeaders,
  });
  return { job, plan, tokenizer: tok.tokenizer, output };
}

/** How the chat reply is read: the model's parsers (config, else its name, else its
 *  model_type), the request's tools, tool_choice and include_reasoning. */
function outputPlanOf(gw: GatewayContext, p: OpenAiRequest, tok: ModelTokenizer): OutputPlan {
  const model = Object.hasOwn(gw.config.models, p.model) ? gw.config.models[p.model] : undefined;
  const parsers = resolveParsers(p.model, tok.modelType, { ...optional("tool_parser", model?.tool_parser), ...optional("reasoning_parser", model?.reasoning_parser) });
  try {
    return planOutput(p.body, parsers);
  } catch (err) {
    if (err instanceof ToolRequestError) throw new GatewayError("invalid_request", 400, err.message, undefined, err.field);
    throw err;
  }
}

/** The frames as OpenAI SSE events while they come, or as one JSON answer. */
async function render(gw: GatewayContext, stream: LegStream<GenerateResponse>, builder: OpenAiResponseBuilder, plan: SamplingPlan, s: EngineGenerationScope): Promise<Response> {
  if (plan.stream) {
    s.headers.set("content-type", "text/event-stream");
    s.headers.set("cache-control", "no-cache");
    const body = engineSseBody(stream, builder, {
      n: plan.n,
      leg: "decode",
      clientSignal: gw.clientSignal,
      now: Date.now,
      onEnd: (end) => s.metrics.end(end.status, end.errorCode, outputStatsOf(end)),
    });
    return new Response(body, { status: 200, headers: s.headers });
  }
  const result = await engineJsonResult(stream, builder, plan.n, gw.clientSignal);
  s.metrics.end(200);
  s.headers.set("content-type", "application/json");
  return new Response(JSON.stringify(result), { status: 200, headers: s.headers });
}

/** What the SSE body sent, for the metrics writer: the first and last text events, and the
 *  usage the builder counted (core/usage.ts). */
function outputStatsOf(end: EngineStreamEnd): OutputStats {
  return { firstOutputAt: end.firstTextAt, lastOutputAt: end.lastTextAt, outputTokens: end.usage.completion_tokens, inputTokens: end.usage.prompt_tokens };
}

/** SamplingParams for the request, after the context-window check (a 400 naming the field). */
function planOf(chat: boolean, body: Record<string, unknown>, prompt: EnginePrompt, tok: ModelTokenizer, maxN: number): SamplingPlan {
  if (prompt.ids.length === 0) throw new GatewayError("invalid_request", 400, `${prompt.field}: the prompt is empty`, undefined, prompt.field);
  const max = maxTokensField(chat, body);
  const tooLong = contextWindowError({
    promptTokens: prompt.ids.length,
    maxTokens: max.value,
    maxField: max.field,
    promptField: prompt.field,
    maxContextLength: tok.maxContextLength,
  });
  if (tooLong) throw tooLong;
  try {
    return samplingPlan(chat ? "chat" : "completions", body, {
      maxN,
      promptTokens: prompt.ids.length,
      ...optional("maxContextLength", tok.maxContextLength),
    });
  } catch (err) {
    if (err instanceof SamplingParamError) throw new GatewayError("invalid_request", 400, err.message, undefined, err.field);
    throw err;
  }
}

/** The isolate's tokenizer cache, created on the first request that needs one. */
export function tokenizersOf(isolate: IsolateState): TokenizerBundles {
  return (isolate.tokenizers ??= new TokenizerBundles({ clientOf: (engine) => isolate.engines.vllmEngine(engine) }));
}
