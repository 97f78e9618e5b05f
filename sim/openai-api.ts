// vLLM's OpenAI-compatible server (`vllm serve` with a KV connector) on the engine's HTTP port:
// completions and chat, stream and non-stream, with top-level kv_transfer_params in and out.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { EventQueue } from "./async.js";
import type { SimEngine } from "./engine.js";
import { parseFaultHeader } from "./faults.js";
import { httpStatusForCode } from "./http-status.js";
import { BodyError, headerRecord, onClientGone, openAiError, readBody, sendJson, sendOpenAiError } from "./http-util.js";
import type { KvParams } from "./kv-params.js";
import { kvParamsOfBody } from "./body-fields.js";
import { parseOpenAiRequest, OpenAiBadRequest, type OpenAiRequest } from "./openai-parse.js";
import type { GenEvent, Run } from "./run.js";
import type { SimFault } from "./types.js";
import { detokenize } from "./tokens.js";
import { MAX_CONTEXT, type EngineConfig } from "./spec.js";
import { replyScript, type ReplyScript } from "./reply-script.js";
import type { Script } from "./script.js";
import { chatLogprobs, completionLogprobs, type OutToken } from "./http-logprobs.js";
import { ChatStreamShaper, chatMessage } from "./chat-reply.js";

export type Complete = Extract<GenEvent, { type: "complete" }>;

interface Choice {
  index: number;
  text: string;
  /** Characters of `text` already streamed. */
  sent: number;
  complete?: Complete;
  /** The reply fixed in advance for this choice's prompt, if any. */
  script?: Script;
  /** Output tokens seen so far (streaming). */
  count: number;
  /** The token that finished the sample, sent with the finish chunk. */
  finalToken?: OutToken;
  finalOffset?: number;
  shaper?: ChatStreamShaper;
}

/** Text of a finished sample as vLLM returns it: cut just before the matched stop string, or
 *  just after it with include_stop_str_in_output. */
export function finalText(c: Complete, includeStop = false): string {
  if (c.matchedStopStr === undefined) return c.text;
  const at = c.text.indexOf(c.matchedStopStr);
  return at >= 0 ? c.text.slice(0, at + (includeStop ? c.matchedStopStr.length : 0)) : c.text;
}

function scriptFor(cfg: EngineConfig, p: OpenAiRequest, i: number): ReplyScript {
  return replyScript(cfg, p.fields, p.prompts[i]!, p.promptTexts[i] ?? "");
}

function outTokens(c: Choice): OutToken[] {
  const ids = c.complete?.outputIds ?? [];
  const s = c.script;
  return ids.map((id, pos) => ({ id, pos, text: s ? s.texts[pos % s.texts.length]! : detokenize([id]) }));
}

function stopReason(c: Complete | undefined): string | number | null {
  return c?.matchedStopStr ?? c?.matchedTokenId ?? null;
}

export function handleModels(engine: SimEngine, res: ServerResponse): void {
  const model = engine.cfg.model;
  sendJson(res, 200, {
    object: "list",
    data: [{ id: model, object: "model", created: Math.floor(engine.startedAt / 1000), owned_by: "vllm", root: model, max_model_len: MAX_CONTEXT }],
  });
}

export async function handleGeneration(
  engine: SimEngine,
  route: OpenAiRequest["route"],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  engine.stats.add("generateRequests");
  const headerId = req.headers["x-request-id"];
  const baseId = typeof headerId === "string" && headerId !== "" ? headerId : randomUUID().replace(/-/g, "");
  const headers = headerRecord(req);
  let raw = "";
  let json: unknown;
  let parsed: OpenAiRequest;
  let fault;
  try {
    raw = await readBody(req);
    try {
      json = JSON.parse(raw);
    } catch {
      throw new BodyError("request body is not valid JSON");
    } finally {
      engine.record({ surface: "openai", method: route, protocol: "http", requestId: baseId, body: json ?? raw, receivedAt: Date.now(), headers });
    }
    parsed = parseOpenAiRequest(route, json, engine.cfg);
    fault = parseFaultHeader(req.headers["x-sim-fault"] as string | undefined);
  } catch (err) {
    // Refused before admission: free the prefill's handoff now (vLLM PR 41269).
    await engine.rejectBeforeAdmission(kvParamsOfBody(json), baseId);
    if (err instanceof OpenAiBadRequest) return sendOpenAiError(res, err.status, err.message, err.param);
    return sendOpenAiError(res, 400, (err as Error).message);
  }

  const p = parsed;
  const scripts = p.prompts.map((_, i) => scriptFor(engine.cfg, p, i));
  const runs: Run[] = p.prompts.map((promptIds, i) =>
    engine.startRun({
      requestId: p.prompts.length > 1 ? `${baseId}-${i}` : baseId,
      promptIds, n: p.n, maxTokens: p.maxTokens, minTokens: p.minTokens, stop: p.stop, stopTokenIds: p.stopTokenIds,
      ignoreEos: p.ignoreEos, seed: p.seed, kvParams: p.kvParams, fault, ...scripts[i],
    }),
  );
  const stopWatching = onClientGone(res, () => runs.forEach((r) => void r.cancel()));

  // Merge the runs' events; choice index = prompt position * n + sample index, as vLLM.
  const merged = new EventQueue<{ offset: number; ev: GenEvent }>();
  let open = runs.length;
  runs.forEach((run, i) => {
    void (async () => {
      for await (const ev of run.events) merged.push({ offset: i * p.n, ev });
      if (--open === 0) merged.close();
    })();
  });

  const prefix = route === "/v1/completions" ? "cmpl-" : "chatcmpl-";
  const ctx: ResponseCtx = {
    id: prefix + baseId,
    created: Math.floor(Date.now() / 1000),
    model: engine.cfg.model,
    chat: route === "/v1/chat/completions",
    choices: Array.from({ length: p.prompts.length * p.n }, (_, index) => ({
      index, text: "", sent: 0, count: 0, script: scripts[Math.floor(index / p.n)]!.script,
      shaper: route === "/v1/chat/completions" ? new ChatStreamShaper(engine.cfg, p.fields, index) : undefined,
    })),
    promptTokens: p.prompts.reduce((s, ids) => s + ids.length, 0),
    cfg: engine.cfg,
    req: p,
  };
  const leg = p.kvParams?.do_remote_decode === true ? "prefill" : "decode";
  const big = p.stream ? engine.faults.takeBigEvent(leg, fault) : undefined;
  const endLateMs = p.stream ? engine.faults.takeEndLate(leg, fault) : undefined;
  try {
    if (p.stream) await streamResponse(ctx, p, merged, res, big, endLateMs);
    else await finalResponse(ctx, merged, res);
  } finally {
    stopWatching();
  }
}

interface ResponseCtx {
  id: string;
  created: number;
  model: string;
  chat: boolean;
  choices: Choice[];
  promptTokens: number;
  cfg: EngineConfig;
  req: OpenAiRequest;
}

/** With a parser and include_reasoning off, vLLM sends no logprobs (they would spell the
 *  hidden reasoning). */
function logprobsK(ctx: ResponseCtx): number | undefined {
  const parser = ctx.cfg.reasoningParser !== undefined || ctx.cfg.toolCallParser !== undefined;
  return ctx.chat && parser && !ctx.req.fields.includeReasoning ? undefined : ctx.req.fields.logprobs;
}

function logprobsOf(ctx: ResponseCtx, tokens: OutToken[], offset: number): unknown {
  const k = logprobsK(ctx);
  if (k === undefined) return null;
  return ctx.chat ? chatLogprobs(tokens, k) : completionLogprobs(tokens, k, offset);
}

function usage(ctx: ResponseCtx) {
  const completion = ctx.choices.reduce((s, c) => s + (c.complete?.outputIds.length ?? 0), 0);
  return { prompt_tokens: ctx.promptTokens, completion_tokens: completion, total_tokens: ctx.promptTokens + completion };
}

/** One event of about `big.bytes` bytes: logprobs for an empty text, as vLLM sends with
 *  `logprobs` set; written in 64 KiB pieces, without its blank line when `unterminated`. */
function writeBigEvent(res: ServerResponse, ctx: ResponseCtx, object: string, big: NonNullable<SimFault["bigEvent"]>): void {
  const entry = '{"token":"tok","logprob":-0.5},';
  const head = `data: {"id":${JSON.stringify(ctx.id)},"object":"${object}","created":${ctx.created},"model":${JSON.stringify(ctx.model)},"choices":[{"index":0,${ctx.chat ? '"delta":{}' : '"text":""'},"logprobs":{"content":[`;
  const tail = '{"token":"end","logprob":0}]},"finish_reason":null}]}';
  const count = Math.max(0, Math.ceil((big.bytes - head.length - tail.length) / entry.length));
  const text = head + entry.repeat(count) + tail + (big.unterminated ? "" : "\n\n");
  const PIECE = 64 * 1024;
  for (let at = 0; at < text.length; at += PIECE) res.write(text.slice(at, at + PIECE));
}

export function errorStatus(ev: Extract<GenEvent, { type: "error" }>): number {
  return ev.httpStatus ?? httpStatusForCode(ev.code);
}

async function finalResponse(ctx: ResponseCtx, events: EventQueue<{ offset: number; ev: GenEvent }>, res: ServerResponse): Promise<void> {
  let kv: KvParams | null = null;
  for await (const { offset, ev } of events) {
    if (ev.type === "error") {
      if (!res.headersSent) sendOpenAiError(res, errorStatus(ev), ev.message);
      return;
    }
    if (ev.type !== "complete") continue;
    const choice = ctx.choices[offset + ev.index]!;
    choice.complete = ev;
    if (ev.kvTransferParams && kv === null) kv = ev.kvTransferParams;
  }
  if (res.destroyed) return;
  const choices = ctx.choices.map((c) => {
    const finish = c.complete?.finishReason ?? "abort";
    const text = c.complete ? finalText(c.complete, ctx.req.fields.includeStopStr) : "";
    const logprobs = logprobsOf(ctx, outTokens(c), 0);
    if (!ctx.chat) return { index: c.index, text, logprobs, finish_reason: finish, stop_reason: stopReason(c.complete) };
    const m = chatMessage(text, finish, ctx.cfg, ctx.req.fields);
    return { index: c.index, message: m.message, logprobs, finish_reason: m.finish, stop_reason: stopReason(c.complete) };
  });
  sendJson(res, 200, {
    id: ctx.id,
    object: ctx.chat ? "chat.completion" : "text_completion",
    created: ctx.created,
    model: ctx.model,
    choices,
    usage: usage(ctx),
    kv_transfer_params: kv,
  });
}

async function streamResponse(
  ctx: ResponseCtx,
  p: OpenAiRequest,
  events: EventQueue<{ offset: number; ev: GenEvent }>,
  res: ServerResponse,
  big?: SimFault["bigEvent"],
  endLateMs?: number,
): Promise<void> {
  const object = ctx.chat ? "chat.completion.chunk" : "text_completion";
  const send = (choices: unknown[], extra: Record<string, unknown> = {}) => {
    res.write(`data: ${JSON.stringify({ id: ctx.id, object, created: ctx.created, model: ctx.model, choices, ...extra })}\n\n`);
  };
  const roleChunk = (c: Choice) => ({ index: c.index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null });
  /** One token's chunk (finish = null) or the finish chunk; undefined when vLLM sends none. */
  const choiceChunk = (c: Choice, text: string, tokens: OutToken[], finish: string | null, offset: number) => {
    const logprobs = tokens.length ? logprobsOf(ctx, tokens, offset) : null;
    const stop = finish ? { stop_reason: stopReason(c.complete) } : {};
    if (!ctx.chat) return { index: c.index, text, logprobs, finish_reason: finish, stop_reason: finish ? stopReason(c.complete) : null };
    const delta = c.shaper!.feed(text, finish !== null);
    if (delta === undefined && finish === null && logprobs === null) return undefined;
    return { index: c.index, delta: delta ?? {}, logprobs, finish_reason: finish && c.shaper!.finishReason(finish), ...stop };
  };
  // vLLM's detokenizer holds back what could still become a stop string, so none of it is
  // ever streamed (unless the stop string is to be included).
  const holdback = p.stop.length > 0 && !p.fields.includeStopStr ? Math.max(...p.stop.map((st) => st.length)) - 1 : 0;
  const sendChunk = (chunk: unknown) => chunk !== undefined && send([chunk]);
  // Headers wait for the first event, so a start failure is a plain HTTP error (and a decode
  // shows nothing until its KV pull finished).
  const begin = () => {
    if (res.headersSent) return;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    if (ctx.chat) for (const c of ctx.choices) send([roleChunk(c)]);
    if (big) writeBigEvent(res, ctx, object, big);
  };
  for await (const { offset, ev } of events) {
    if (res.destroyed) return;
    if (ev.type === "error") {
      if (!res.headersSent) return sendOpenAiError(res, errorStatus(ev), ev.message);
      // Faults a real engine's stream can also end in: a connection that breaks off, or a
      // response that ends without [DONE].
      if (ev.sse === "reset") return void res.destroy();
      if (ev.sse === "no-done") return void res.end();
      // As vLLM's stream generators do: the error event, then [DONE] (serving_completion.py,
      // serving_chat.py: `yield f"data: {data}\n\n"` in the except, then `yield "data: [DONE]\n\n"`).
      res.write(`data: ${JSON.stringify(openAiError(errorStatus(ev), ev.message))}\n\ndata: [DONE]\n\n`);
      res.end();
      return;
    }
    begin();
    // The event never ends: nothing more until the client goes away.
    if (big?.unterminated) return new Promise<void>((r) => (res.destroyed ? r() : res.once("close", () => r())));
    const c = ctx.choices[offset + ev.index]!;
    if (ev.type === "token") {
      const at = c.text.length;
      c.text += ev.text;
      const tok = { id: ev.tokenId, text: ev.text, pos: c.count++ };
      if (ev.final) {
        c.finalToken = tok; // sent with the finish_reason below
        c.finalOffset = at;
        continue;
      }
      const upto = Math.max(c.sent, c.text.length - holdback);
      sendChunk(choiceChunk(c, c.text.slice(c.sent, upto), [tok], null, at));
      c.sent = upto;
      continue;
    }
    c.complete = ev;
    const text = finalText(ev, p.fields.includeStopStr);
    sendChunk(choiceChunk(c, text.length > c.sent ? text.slice(c.sent) : "", c.finalToken ? [c.finalToken] : [], ev.finishReason, c.finalOffset ?? c.text.length));
    c.sent = Math.max(c.sent, text.length);
  }
  if (res.destroyed) return;
  begin();
  if (p.includeUsage) send([], { usage: usage(ctx) });
  res.write("data: [DONE]\n\n");
  if (endLateMs) await new Promise((r) => setTimeout(r, endLateMs));
  res.end();
}
