// vLLM's Responses API on the engine's HTTP port (vllm/entrypoints/openai/responses/
// api_router.py, serving.py and simple_streaming_events.py, with kv_transfer_params from vLLM
// PR 37424), the path without Harmony: the engine's reasoning and tool parsers split the reply
// into reasoning, message and function_call items (responses-reply.ts).
// vLLM keeps nothing (VLLM_ENABLE_RESPONSES_API_STORE is off by default), and neither does the sim.
import type { IncomingMessage, ServerResponse } from "node:http";
import { admit, randomHex } from "./admission.js";
import { OpenAiBadRequest } from "./body-fields.js";
import type { SimEngine } from "./engine.js";
import { onClientGone, sendJson, sendOpenAiError } from "./http-util.js";
import type { KvParams } from "./kv-params.js";
import { errorStatus, finalText, type Complete } from "./openai-api.js";
import { ChatStreamShaper, chatMessage } from "./chat-reply.js";
import { outputTexts, reasoningTokenCount, replyScript, type ReplyScript } from "./reply-script.js";
import { parseResponsesRequest, responseIdOf, type ResponsesRequest } from "./responses-parse.js";
import { responseOutput, ResponsesItemStream } from "./responses-reply.js";
import type { Run } from "./run.js";
import type { EngineConfig } from "./spec.js";

interface Ctx {
  p: ResponsesRequest;
  model: string;
  createdAt: number;
  cfg: EngineConfig;
  reply: ReplyScript;
}

interface Outcome {
  status: "in_progress" | "completed" | "incomplete";
  output: unknown[];
  done?: Complete;
}

/** ResponsesResponse.from_request, dumped without exclude_none as api_router does. */
function responseObject(ctx: Ctx, o: Outcome): Record<string, unknown> {
  const d = o.done;
  const usage = d && {
    input_tokens: ctx.p.promptIds.length,
    input_tokens_details: { cached_tokens: d.cachedTokens, input_tokens_per_turn: [], cached_tokens_per_turn: [] },
    output_tokens: d.outputIds.length,
    output_tokens_details: { reasoning_tokens: reasoningTokenCount(ctx.cfg, outputTexts(d.outputIds, ctx.reply.script), ctx.p.fields.enableThinking), tool_output_tokens: 0, output_tokens_per_turn: [], tool_output_tokens_per_turn: [] },
    total_tokens: ctx.p.promptIds.length + d.outputIds.length,
  };
  const e = ctx.p.echo;
  return {
    id: ctx.p.id, created_at: ctx.createdAt,
    incomplete_details: o.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: e.instructions, metadata: e.metadata, model: ctx.model, object: "response", output: o.output,
    parallel_tool_calls: e.parallel_tool_calls, temperature: e.temperature, tool_choice: e.tool_choice, tools: e.tools,
    top_p: e.top_p, background: false, max_output_tokens: ctx.p.maxTokens, max_tool_calls: e.max_tool_calls,
    previous_response_id: null, prompt: null, reasoning: e.reasoning, service_tier: e.service_tier, status: o.status,
    text: e.text, top_logprobs: null, truncation: e.truncation, usage: usage ?? null, user: e.user,
    presence_penalty: 0, frequency_penalty: 0,
    kv_transfer_params: (d?.kvTransferParams ?? null) as KvParams | null, ec_transfer_params: null,
    input_messages: null, output_messages: null,
  };
}

/** "incomplete" iff length-capped; every other finish is "completed" (serving.py). */
const statusOf = (d: Complete | undefined): Outcome["status"] => (d?.finishReason === "length" ? "incomplete" : "completed");

/** The final output: the reply through the engine's parsers, as items. */
function outputOf(ctx: Ctx, done: Complete | undefined): { output: unknown[]; status: Outcome["status"] } {
  const chat = chatMessage(done ? finalText(done) : "", done?.finishReason ?? "abort", ctx.cfg, ctx.p.fields);
  return { output: responseOutput(chat.message), status: statusOf(done) };
}

export async function handleResponses(engine: SimEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let id = `resp_${randomHex()}`;
  // vLLM's engine request id is the response id plus the sub-request index.
  const a = await admit(engine, "/v1/responses", req, {
    requestIdOf: (json) => {
      id = responseIdOf(json) ?? id;
      return `${id}_0`;
    },
    parse: (json) => parseResponsesRequest(json, engine.cfg, id),
  });
  if (!a.ok) {
    const err = a.error;
    if (err instanceof OpenAiBadRequest) return sendOpenAiError(res, err.status, err.message, err.param, err.type);
    return sendOpenAiError(res, 400, err.message);
  }
  const p = a.parsed;
  const reply = replyScript(engine.cfg, p.fields, p.promptIds, p.promptText, !p.ignoreEos);
  const run = engine.startRun({
    requestId: a.requestId, promptIds: p.promptIds, n: 1, maxTokens: p.maxTokens, minTokens: 0, stop: p.stop,
    stopTokenIds: [], ignoreEos: p.ignoreEos, seed: p.seed, kvParams: p.kvParams, fault: a.fault, ...reply,
  });
  const stopWatching = onClientGone(res, () => void run.cancel());
  const ctx: Ctx = { p, model: engine.cfg.model, createdAt: Math.floor(Date.now() / 1000), cfg: engine.cfg, reply };
  try {
    if (p.stream) await streamResponse(ctx, run, res);
    else await fullResponse(ctx, run, res);
  } finally {
    stopWatching();
  }
}

async function fullResponse(ctx: Ctx, run: Run, res: ServerResponse): Promise<void> {
  let done: Complete | undefined;
  for await (const ev of run.events) {
    if (ev.type === "error") {
      if (!res.headersSent) sendOpenAiError(res, errorStatus(ev), ev.message);
      return;
    }
    if (ev.type === "complete") done = ev;
  }
  if (res.destroyed) return;
  sendJson(res, 200, responseObject(ctx, { ...outputOf(ctx, done), done }));
}

/** The streamed events of process_simple_stream, each as `event: <type>\ndata: <json>\n\n`
 *  with its sequence_number, and no [DONE]. */
async function streamResponse(ctx: Ctx, run: Run, res: ServerResponse): Promise<void> {
  let seq = 0;
  const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  const shaper = new ChatStreamShaper(ctx.cfg, ctx.p.fields, 0);
  const items = new ResponsesItemStream(send);
  let text = "";
  let streamed = 0;
  let done: Complete | undefined;
  const feed = (t: string, final: boolean) => {
    const d = shaper.feed(t, final);
    if (d) items.feed(d);
  };
  // Headers wait for the first event, as on the chat path: a start failure is a plain error.
  const begin = () => {
    if (res.headersSent) return;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const initial = responseObject(ctx, { status: "in_progress", output: [] });
    send("response.created", { response: initial });
    send("response.in_progress", { response: initial });
  };
  for await (const ev of run.events) {
    if (res.destroyed) return;
    if (ev.type === "error") {
      if (!res.headersSent) return sendOpenAiError(res, errorStatus(ev), ev.message);
      if (ev.sse === "reset") return void res.destroy();
      if (ev.sse !== "no-done") send("error", { code: "InternalServerError", message: ev.message, param: null });
      return void res.end();
    }
    begin();
    if (ev.type === "token") {
      text += ev.text;
      if (!ev.final && text.length > streamed) feed(text.slice(streamed), false);
      if (!ev.final) streamed = text.length;
      continue;
    }
    done = ev;
    const final = finalText(ev);
    feed(final.length > streamed ? final.slice(streamed) : "", true);
    streamed = Math.max(streamed, final.length);
  }
  if (res.destroyed) return;
  begin();
  items.end();
  send("response.completed", { response: responseObject(ctx, { ...outputOf(ctx, done), done }) });
  res.end();
}
