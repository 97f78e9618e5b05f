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
import { errorStatus, finalText, type Complete } from "./openai-api.js";
import type { Run } from "./run.js";

interface Ctx {
  id: string;
  model: string;
  promptTokens: number;
}

/** A refusal in vLLM's shape for it: the handler's in Anthropic's envelope, a schema error (or
 *  JSON that does not parse) in the OpenAI shape of vLLM's global validation handler. */
function sendRefusal(res: ServerResponse, err: Error): void {
  if (err instanceof AnthropicRefusal) return sendAnthropicError(res, err.status, err.message);
  if (err instanceof OpenAiBadRequest) return sendOpenAiError(res, err.status, err.message, err.param, err.type);
  sendOpenAiError(res, 400, err.message);
}

/** stop_reason / stop_sequence as serving.py maps chat's finish_reason and stop_reason: a
 *  matched stop string is "stop_sequence"; EOS or a stop token id is "end_turn". */
function stopOf(c: Complete | undefined): { stop_reason?: string; stop_sequence?: string } {
  if (c?.finishReason === "length") return { stop_reason: "max_tokens" };
  if (c?.finishReason !== "stop") return {};
  return c.matchedStopStr !== undefined ? { stop_reason: "stop_sequence", stop_sequence: c.matchedStopStr } : { stop_reason: "end_turn" };
}

export async function handleMessages(engine: SimEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const base = headerRequestId(req);
  const a = await admit(engine, "/v1/messages", req, {
    requestIdOf: () => base,
    parse: (json) => parseMessagesRequest(json, engine.cfg.model),
  });
  if (!a.ok) return sendRefusal(res, a.error);
  const p: MessagesRequest = a.parsed;
  const run = engine.startRun({
    requestId: a.requestId, promptIds: p.promptIds, n: 1, maxTokens: p.maxTokens, minTokens: 0, stop: p.stop,
    stopTokenIds: [], ignoreEos: false, seed: undefined, kvParams: p.kvParams, fault: a.fault,
  });
  const stopWatching = onClientGone(res, () => void run.cancel());
  const ctx: Ctx = { id: `chatcmpl-${a.requestId}`, model: engine.cfg.model, promptTokens: p.promptIds.length };
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
 *  kv_transfer_params is left out; an empty completion is one empty text block. */
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
  sendJson(res, 200, {
    id: ctx.id, type: "message", role: "assistant",
    content: [{ type: "text", text: done ? finalText(done) : "" }],
    model: ctx.model, ...stopOf(done),
    usage: { input_tokens: ctx.promptTokens, output_tokens: done?.outputIds.length ?? 0 },
    ...(done?.kvTransferParams ? { kv_transfer_params: done.kvTransferParams } : {}),
  });
}

/** The streamed message, as serving.py's message_stream_converter turns chat chunks into
 *  Anthropic events, each with its `event:` line. The text block opens with the first
 *  non-empty delta; no ping is sent. */
async function streamMessage(ctx: Ctx, run: Run, res: ServerResponse): Promise<void> {
  const send = (event: string, data: Record<string, unknown>) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  let text = "";
  let sent = 0;
  let blockOpen = false;
  let done: Complete | undefined;
  const delta = (t: string) => {
    if (t === "") return;
    if (!blockOpen) send("content_block_start", { content_block: { type: "text", text: "" }, index: 0 });
    blockOpen = true;
    send("content_block_delta", { delta: { type: "text_delta", text: t }, index: 0 });
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
      delta(text.slice(sent));
      sent = text.length;
      continue;
    }
    done = ev;
    const final = finalText(ev);
    delta(final.length > sent ? final.slice(sent) : "");
    sent = Math.max(sent, final.length);
  }
  if (res.destroyed) return;
  begin();
  if (blockOpen) send("content_block_stop", { index: 0 });
  send("message_delta", { delta: stopOf(done), usage: { input_tokens: ctx.promptTokens, output_tokens: done?.outputIds.length ?? 0 } });
  send("message_stop", {});
  res.end();
}
