// The VllmEngine service as the upstream Python servicer implements it, over Connect, gRPC-web
// and (on the h2c listener) plain gRPC. Request parsing mirrors the servicer's validation.
import { create, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import {
  AbortRequestSchema,
  GenerateRequestSchema,
  GenerateResponseSchema,
  VllmEngine,
  type GenerateRequest,
  type GenerateResponse,
} from "../src/gen/vllm_engine_pb.js";
import { parseCode, parseFaultHeader } from "./faults.js";
import type { KvParams } from "./kv-params.js";
import type { SimEngine } from "./engine.js";
import { DEFAULT_MAX_TOKENS, MAX_CONTEXT, MAX_N } from "./spec.js";
import type { GenEvent, GenInput } from "./run.js";
import { tokenize } from "./tokens.js";
import { inputLogprobs, outputLogprobs } from "./logprobs.js";
import { constrainedReply, outputRemap, QWEN3_MODEL_INFO, servesRealTokenizer, tokenizerChunks, wantsBadSha } from "./tokenizer-bundle.js";


function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** The servicer's kv-params extraction: JSON field (must be an object) wins over legacy typed. */
export function kvParamsOf(req: GenerateRequest): KvParams | undefined {
  if (req.kvTransferParamsJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(req.kvTransferParamsJson);
    } catch {
      throw invalid("kv_transfer_params_json: not valid JSON");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw invalid("kv_transfer_params_json: must be a JSON object");
    }
    return parsed as KvParams;
  }
  const legacy = req.kvTransferParams;
  if (legacy) {
    if (legacy.remoteHost === "") throw invalid("kv_transfer_params.remote_host: must not be empty");
    if (legacy.remotePort < 1 || legacy.remotePort > 65535) throw invalid("kv_transfer_params.remote_port: must be in 1..65535");
    return { remote_host: legacy.remoteHost, remote_port: legacy.remotePort };
  }
  return undefined;
}

/** The request's kv params, or undefined when they are themselves what was invalid. */
function kvParamsIfValid(req: GenerateRequest): KvParams | undefined {
  try {
    return kvParamsOf(req);
  } catch {
    return undefined;
  }
}

function toGenInput(req: GenerateRequest, ctx: HandlerContext, maxContext: number): GenInput {
  let promptIds: number[];
  if (req.input.case === "text") promptIds = tokenize(req.input.value);
  else if (req.input.case === "tokenized") {
    const t = req.input.value;
    promptIds = t.inputIds.length > 0 ? [...t.inputIds] : tokenize(t.originalText);
  } else throw invalid("input: one of text or tokenized is required");
  // The servicer's tokenization kwargs: keep the last truncate_prompt_tokens ids.
  const truncate = req.samplingParams?.truncatePromptTokens;
  if (truncate !== undefined && truncate > 0 && promptIds.length > truncate) promptIds = promptIds.slice(promptIds.length - truncate);
  if (promptIds.length === 0) throw invalid("input: the prompt cannot be empty");
  if (promptIds.length > maxContext) throw invalid(`input: prompt of ${promptIds.length} tokens exceeds max_context_length ${maxContext}`);
  const sp = req.samplingParams;
  const maxTokens = sp?.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (maxTokens < 1) throw invalid("sampling_params.max_tokens: must be at least 1");
  // vLLM refuses a request whose prompt plus output cannot fit the context window.
  if (promptIds.length + maxTokens > maxContext) {
    throw invalid(`sampling_params.max_tokens: prompt (${promptIds.length}) + max_tokens (${maxTokens}) exceeds max_context_length ${maxContext}`);
  }
  const n = sp?.n || 1;
  if (n > MAX_N) throw invalid(`sampling_params.n: must be at most ${MAX_N}`);
  let fault;
  try {
    fault = parseFaultHeader(ctx.requestHeader.get("x-sim-fault"));
  } catch (err) {
    throw invalid((err as Error).message);
  }
  return {
    requestId: req.requestId !== "" ? req.requestId : `sim-${randomUUID()}`,
    promptIds,
    n,
    maxTokens,
    minTokens: sp?.minTokens ?? 0,
    stop: sp?.stop ?? [],
    stopTokenIds: sp?.stopTokenIds ?? [],
    ignoreEos: sp?.ignoreEos ?? false,
    seed: sp?.seed,
    kvParams: kvParamsOf(req),
    fault,
    dataParallelRank: req.dataParallelRank,
  };
}

/** What the request asked the engine to return besides tokens (SamplingParams.logprobs,
 *  prompt_logprobs). */
interface LogprobAsk {
  logprobs?: number;
  promptLogprobs?: number;
  promptIds: number[];
}

function completeFrame(ev: Extract<GenEvent, { type: "complete" }>, promptTokens: number, ask: LogprobAsk, start: number): GenerateResponse {
  const p = ev.kvTransferParams;
  const host = p?.remote_host;
  const port = p?.remote_port;
  // The servicer mirrors the typed legacy field only when the dict has a valid host and port.
  const legacy = typeof host === "string" && host !== "" && typeof port === "number" && port >= 1 && port <= 65535
    ? { remoteHost: host, remotePort: port }
    : undefined;
  return create(GenerateResponseSchema, {
    response: {
      case: "complete",
      value: {
        outputIds: ev.outputIds,
        finishReason: ev.finishReason,
        promptTokens,
        completionTokens: ev.outputIds.length,
        cachedTokens: ev.cachedTokens,
        index: ev.index,
        outputLogprobs: ask.logprobs !== undefined && ev.outputIds.length > 0 ? outputLogprobs(ev.outputIds, start, ask.logprobs) : undefined,
        inputLogprobs: ask.promptLogprobs !== undefined ? inputLogprobs(ask.promptIds, ask.promptLogprobs) : undefined,
        kvTransferParams: legacy,
        kvTransferParamsJson: p ? JSON.stringify(p) : undefined,
        matchedStop:
          ev.matchedStopStr !== undefined
            ? { case: "matchedStopStr", value: ev.matchedStopStr }
            : ev.matchedTokenId !== undefined
              ? { case: "matchedTokenId", value: ev.matchedTokenId }
              : { case: undefined },
      },
    },
  });
}

function headerObject(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => (out[k] = v));
  return out;
}

function unimplemented(method: string): never {
  throw new ConnectError(`${method} is not implemented by the sim engine`, Code.Unimplemented);
}

export function vllmEngineRoutes(engine: SimEngine): (router: ConnectRouter) => void {
  const cfg = engine.cfg;
  return (router) => {
    router.service(VllmEngine, {
      async *generate(req, ctx) {
        engine.stats.add("generateRequests");
        engine.record({
          surface: "grpc", method: "Generate", protocol: ctx.protocolName, requestId: req.requestId,
          body: toJson(GenerateRequestSchema, req, { useProtoFieldName: true }), receivedAt: Date.now(),
          headers: headerObject(ctx.requestHeader),
        });
        let input: GenInput;
        try {
          // The context GetModelInfo reports (Qwen3 engines: the real model's).
          input = toGenInput(req, ctx, servesRealTokenizer(cfg.model) ? QWEN3_MODEL_INFO.maxContextLength : MAX_CONTEXT);
        } catch (err) {
          // Refused before admission: free the prefill's handoff now (vLLM PR 41269).
          await engine.rejectBeforeAdmission(kvParamsIfValid(req), req.requestId);
          throw err;
        }
        const promptTokens = input.promptIds.length;
        // Qwen3-model engines emit ids in the real tokenizer's space (sim/tokenizer-bundle.ts).
        const reply = await constrainedReply(cfg.model, req.samplingParams?.constraint, input.promptIds);
        const remap = reply ? (pos: number) => reply[pos % reply.length]! : await outputRemap(cfg.model, input.promptIds);
        if (reply) input.replyLength = reply.length;
        const ask: LogprobAsk = { logprobs: req.samplingParams?.logprobs, promptLogprobs: req.samplingParams?.promptLogprobs, promptIds: input.promptIds };
        const seen = new Set<number>();
        const run = engine.startRun(input);
        // ctx.signal also fires on normal completion; run.cancel() is a no-op once it ended.
        const onCancel = () => void run.cancel();
        if (ctx.signal.aborted) onCancel();
        else ctx.signal.addEventListener("abort", onCancel, { once: true });
        const finals: Extract<GenEvent, { type: "complete" }>[] = [];
        // DELTA mode (the servicer's _chunk_response / _complete_response): each chunk carries
        // its own tokens and their count, and a streamed complete repeats only the last delta
        // (the tokens of the step that finished the index; none for an abort).
        const lastDelta = new Map<number, number[]>();
        let frames = 0;
        const afterFrame = () => {
          const f = run.fault?.failAfterFrames;
          if (f && ++frames >= f.frames) {
            throw new ConnectError(f.message ?? `injected failAfterFrames after ${f.frames} frames (${f.code})`, parseCode(f.code) ?? Code.Internal);
          }
        };
        try {
          for await (const ev of run.events) {
            if (ev.type === "error") throw new ConnectError(ev.message, ev.code);
            if (!req.stream) {
              // FINAL_ONLY: nothing until the whole request finished, then one complete per index.
              if (ev.type === "complete") finals.push(ev);
              continue;
            }
            if (ev.type === "token") {
              const delta = [remap(ev.completionTokens - 1, ev.tokenId)];
              if (ev.final) lastDelta.set(ev.index, delta);
              // The servicer: the delta's logprobs on every chunk, the prompt's on the first of each index.
              const first = !seen.has(ev.index);
              seen.add(ev.index);
              yield create(GenerateResponseSchema, {
                response: {
                  case: "chunk",
                  value: {
                    tokenIds: delta, promptTokens, completionTokens: delta.length, cachedTokens: ev.cachedTokens, index: ev.index,
                    outputLogprobs: ask.logprobs !== undefined ? outputLogprobs(delta, ev.completionTokens - 1, ask.logprobs) : undefined,
                    inputLogprobs: first && ask.promptLogprobs !== undefined ? inputLogprobs(input.promptIds, ask.promptLogprobs) : undefined,
                  },
                },
              });
              afterFrame();
            } else {
              yield completeFrame({ ...ev, outputIds: lastDelta.get(ev.index) ?? [] }, promptTokens, ask, Math.max(ev.outputIds.length - 1, 0));
              lastDelta.delete(ev.index);
              afterFrame();
            }
          }
          finals.sort((a, b) => a.index - b.index);
          for (const ev of finals) {
            yield completeFrame({ ...ev, outputIds: ev.outputIds.map((id, pos) => remap(pos, id)) }, promptTokens, ask, 0);
            afterFrame();
          }
        } finally {
          ctx.signal.removeEventListener("abort", onCancel);
          if (!run.ended) void run.cancel();
        }
      },
      embed() {
        return unimplemented("Embed");
      },
      healthCheck() {
        const unhealthy = engine.faults.unhealthy;
        return { healthy: !unhealthy, message: unhealthy ? "Engine is not alive" : "Health" };
      },
      async abort(req, ctx) {
        engine.record({
          surface: "grpc", method: "Abort", protocol: ctx.protocolName, requestId: req.requestIds[0],
          body: toJson(AbortRequestSchema, req, { useProtoFieldName: true }), receivedAt: Date.now(),
          headers: headerObject(ctx.requestHeader),
        });
        await engine.abort(req.requestIds);
        // Acted on at once, answered late (a busy engine's reply).
        const slow = engine.faults.slowAbortMs;
        if (slow > 0) await new Promise((r) => setTimeout(r, slow));
        return {};
      },
      getModelInfo() {
        return {
          modelPath: `/models/${cfg.model}`,
          servedModelName: cfg.model,
          isGeneration: true,
          maxContextLength: MAX_CONTEXT,
          vocabSize: 50_000,
          supportsVision: false,
          tokenizerPath: `/models/${cfg.model}`,
          modelType: "sim",
          architectures: ["SimForCausalLM"],
          eosTokenIds: [2],
          padTokenId: 0,
          bosTokenId: 1,
          maxReqInputLen: MAX_CONTEXT,
          ...(servesRealTokenizer(cfg.model) ? QWEN3_MODEL_INFO : {}),
        };
      },
      getServerInfo() {
        const connector = cfg.kvConnector === "none" ? "" : cfg.kvConnector;
        const roles: Record<string, string> = { prefill: "kv_producer", decode: "kv_consumer", both: "kv_both" };
        return {
          activeRequests: engine.activeRequests,
          isPaused: false,
          lastReceiveTimestamp: engine.stats.lastReceiveAt / 1000,
          uptimeSeconds: (Date.now() - engine.startedAt) / 1000,
          serverType: "vllm-grpc",
          kvConnector: connector,
          kvRole: connector === "" ? "" : (roles[cfg.role] ?? ""),
          kvEngineId: cfg.kvEngineId,
          dataParallelSize: cfg.dataParallelSize,
          shmNamespaceId: "",
        };
      },
      getLoads() {
        const l = engine.loads();
        return {
          timestamp: new Date().toISOString(),
          version: "sim",
          dpRankCount: 1,
          loads: [
            {
              dpRank: 0,
              numRunningReqs: l.running,
              numWaitingReqs: l.waiting,
              numTotalReqs: l.running + l.waiting,
              numUsedTokens: Math.round(l.tokenUsage * cfg.kvCapacityBlocks * cfg.blockSize),
              maxTotalNumTokens: cfg.kvCapacityBlocks * cfg.blockSize,
              tokenUsage: l.tokenUsage,
              maxRunningRequests: 256,
            },
          ],
        };
      },
      getTokenizer(_req, ctx) {
        if (!servesRealTokenizer(cfg.model)) return unimplemented("GetTokenizer");
        return tokenizerChunks(wantsBadSha(cfg.model, ctx.requestHeader.get("x-sim-tokenizer")));
      },
      subscribeKvEvents() {
        return unimplemented("SubscribeKvEvents");
      },
    });
  };
}
