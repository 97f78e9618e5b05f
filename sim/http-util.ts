// node:http helpers shared by the engine routes, the OpenAI API and the control server.
import type { IncomingMessage, ServerResponse } from "node:http";

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export class BodyError extends Error {}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw new BodyError("request body too large");
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Reads and parses a JSON body; an empty body is `undefined`. Throws BodyError when malformed. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = await readBody(req);
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError("request body is not valid JSON");
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-length": 0 });
  res.end();
}

const ERROR_TYPES: Record<number, string> = {
  400: "BadRequestError",
  401: "AuthenticationError",
  403: "PermissionDeniedError",
  404: "NotFoundError",
  409: "ConflictError",
  429: "RateLimitError",
  501: "NotImplementedError",
  503: "ServiceUnavailableError",
  504: "TimeoutError",
};

/** vLLM's OpenAI error body: {"error": {"message", "type", "param", "code"}}. */
export function openAiError(status: number, message: string, param: string | null = null, type?: string) {
  return { error: { message, type: type ?? ERROR_TYPES[status] ?? "InternalServerError", param, code: status } };
}

export function sendOpenAiError(res: ServerResponse, status: number, message: string, param: string | null = null, type?: string): void {
  sendJson(res, status, openAiError(status, message, param, type));
}

/** vLLM's Anthropic error body (vllm/entrypoints/anthropic/api_router.py,
 *  translate_error_response): Anthropic's envelope around vLLM's own error type name
 *  ("BadRequestError", "NotFoundError", ...), not Anthropic's ("invalid_request_error"). */
export function anthropicError(status: number, message: string) {
  return { type: "error", error: { type: openAiError(status, message).error.type, message } };
}

export function sendAnthropicError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, anthropicError(status, message));
}

export function headerRecord(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

/** Calls `onGone` if the client disconnects before the response finished. */
export function onClientGone(res: ServerResponse, onGone: () => void): () => void {
  const listener = () => {
    if (!res.writableFinished) onGone();
  };
  res.once("close", listener);
  return () => res.off("close", listener);
}
