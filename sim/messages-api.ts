// vLLM's Anthropic Messages API on the engine's HTTP port (vllm/entrypoints/anthropic/
// api_router.py and serving.py, with kv_transfer_params from vLLM PR 37535): /v1/messages,
// streamed and not, and /v1/messages/count_tokens. vLLM serves Messages by converting the
// request to a chat completion and the chat result back, so ids, usage and the KV handoff are
// the chat path's.
import type { IncomingMessage, ServerResponse } from "node:http";
import { admit, headerRequestId } from "./admission.js";
import { OpenAiBadRequest } from "./body-fields.js";
import type { SimEngine } from "./engine.js";
import { sendAnthropicError, sendJson, onClientGone, sendOpenAiError } from "./http-util.js";
import { AnthropicRefusal, parseCountTokensRequest, parseMessagesRequest, type MessagesRequest } from "./messages-parse.js";
import { messageContent, MessagesBlockStream } from "./messages-reply.js";
import { ChatStreamShaper, chatMessage } from "./chat-reply.js";
import { errorStatus, finalText, type Complete } from "./openai-api.js";
import { replyScript } from "./reply-script.js";
import type { Run } from "./run.js";
import type { EngineConfig } from "./spec.js";

interface Ctx {
  id: string;
  model: string;
  promptTokens: number;
  cfg: EngineConfig;
  req: MessagesRequest;
}

/** A refusal in vLLM's shape for it: the handler's in Anthropic's envelope, a schema error (or
 *  JSON that does not parse) in the OpenAI shape of vLLM's global validation handler. */
function sendRefusal(res: ServerResponse, err: Error): void {
  if (err instanceof AnthropicRefusal) return sendAnthropicError(res, err.status, err.message);
  if (err instanceof OpenAiBadRequest) return sendOpenAiError(res, err.status, err.message, err.param, err.type);
  sendOpenAiError(res, 400, err.message);
}

/** stop_reason / stop_sequence as serving.py maps chat's finish_reason and stop_reason: a
 *  matched stop string is "stop_sequence"; EOS or a stop token id is "end_turn"; a reply the
 *  tool parser found calls in ("tool_calls") is "tool_use". */
function stopOf(c: Complete | undefined, chatFinish?: string): { stop_reason?: string; stop_sequence?: string } {
  if (chatFinish === "tool_calls") return { stop_reason: "tool_use" };
  if (c?.finishReason === "length") return { stop_reason: "max_tokens" };
  if (c?.finishReason !== "stop") return {};
  return c.matchedStopStr !== undefined ? { stop_reason: "stop_sequence", stop_sequence: c.matchedStopStr } : { stop_reason: "end_turn" };
}

export async function handleMessages(engine: SimEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const base = headerRequestId(req);
  const a = await admit(engine, "/v1/messages", req, {
    requestIdOf: () => base,
    parse: (json) => parseMessagesRequest(json, engine.cfg),
  });
  if (!a.ok) return sendRefusal(res, a.error);
  const p: MessagesRequest = a.parsed;
  const run = engine.startRun({
    requestId: a.requestId, promptIds: p.promptIds, n: 1, maxTokens: p.maxTokens, minTokens: 0, stop: p.stop,
    stopTokenIds: [], ignoreEos: false, seed: undefined, kvParams: p.kvParams, fault: a.fault,
    ...replyScript(engine.cfg, p.fields, p.promptIds, p.promptText, true),
  });
  const stopWatching = onClientGone(res, () => void run.cancel());
  const ctx: Ctx = { id: `chatcmpl-${a.requestId}`, model: engine.cfg.model, promptTokens: p.promptIds.length, cfg: engine.cfg, req: p };
  try {
    if (p.stream) await streamMessage(ctx, run, res);
    else await fullMessage(ctx, run, res);
  } finally {
    stopWatching();
  }
}

export async function handleCountTokens(engine: SimEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const a = await admit(engine, "/v1/messages/count_tokens", req, {
    requestIdOf: () => headerRequestId(req),
    parse: (json) => parseCountTokensRequest(json, engine.cfg.model),
    generation: false,
  });
  if (!a.ok) return sendRefusal(res, a.error);
  const n = a.parsed.length;
  sendJson(res, 200, { input_tokens: n, context_management: { original_input_tokens: n } });
}

/** The non-streamed message: api_router dumps it with exclude_none, so a null stop_sequence or
 *  kv_transfer_params is left out; an empty completion has no content block. */
async function fullMessage(ctx: Ctx, run: Run, res: ServerResponse): Promise<void> {
  let done: Complete | undefined;
  for await (const ev of run.events) {
    if (ev.type === "error") {
      if (!res.headersSent) sendAnthropicError(res, errorStatus(ev), ev.message);
      return;
    }
    if (ev.type === "complete") done = ev;
  }
  if (res.destroyed) return;
  const chat = chatMessage(done ? finalText(done) : "", done?.finishReason ?? "abort", ctx.cfg, ctx.req.fields);
  sendJson(res, 200, {
    id: ctx.id, type: "message", role: "assistant",
    content: messageContent(chat.message),
    model: ctx.model, ...stopOf(done, chat.finish),
    usage: { input_tokens: ctx.promptTokens, output_tokens: done?.outputIds.length ?? 0 },
    ...(done?.kvTransferParams ? { kv_transfer_params: done.kvTransferParams } : {}),
  });
}

/** The streamed message, as serving.py's message_stream_converter turns chat chunks (each text
 *  delta through the chat stream's parsers) into Anthropic events, each with its `event:`
 *  line. No ping is sent. */
async function streamMessage(ctx: Ctx, run: Run, res: ServerResponse): Promise<void> {
  const send = (event: string, data: Record<string, unknown>) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  const shaper = new ChatStreamShaper(ctx.cfg, ctx.req.fields, 0);
  const blocks = new MessagesBlockStream(send);
  // The chat stream holds back what could still become a stop string (openai-api.ts).
  const stop = ctx.req.stop;
  const holdback = stop.length > 0 ? Math.max(...stop.map((st) => st.length)) - 1 : 0;
  let text = "";
  let sent = 0;
  let done: Complete | undefined;
  const feed = (t: string, final: boolean) => {
    const d = shaper.feed(t, final);
    if (d) blocks.feed(d);
  };
  // Headers wait for the first event, as on the chat path: a start failure is a plain error.
  const begin = () => {
    if (res.headersSent) return;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    send("message_start", {
      message: { id: ctx.id, type: "message", role: "assistant", content: [], model: ctx.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: ctx.promptTokens, output_tokens: 0 } },
    });
  };
  for await (const ev of run.events) {
    if (res.destroyed) return;
    if (ev.type === "error") {
      if (!res.headersSent) return sendAnthropicError(res, errorStatus(ev), ev.message);
      if (ev.sse === "reset") return void res.destroy();
      // vLLM's converter fails to parse chat's error chunk and ends with an `error` event of
      // type internal_error, without message_stop.
      if (ev.sse !== "no-done") send("error", { error: { type: "internal_error", message: ev.message } });
      return void res.end();
    }
    begin();
    if (ev.type === "token") {
      text += ev.text;
      if (ev.final) continue;
      const upto = Math.max(sent, text.length - holdback);
      if (upto > sent) feed(text.slice(sent, upto), false);
      sent = upto;
      continue;
    }
    done = ev;
    const final = finalText(ev);
    feed(final.length > sent ? final.slice(sent) : "", true);
    sent = Math.max(sent, final.length);
  }
  if (res.destroyed) return;
  begin();
  blocks.close();
  send("message_delta", { delta: stopOf(done, shaper.finishReason(done?.finishReason ?? "stop")), usage: { input_tokens: ctx.promptTokens, output_tokens: done?.outputIds.length ?? 0 } });
  send("message_stop", {});
  res.end();
}
