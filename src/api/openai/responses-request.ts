// Checks a Responses API request (POST /v1/responses): JSON, the fields the gateway reads
// itself, and what it refuses rather than ignores. Every failure is a 400 naming the field.
// Pure; the JSON text's other fields go to the engine as sent.
import { invalidField, modelBody } from "../json-body.js";

/** One input item as the client sent it (a message, function_call, function_call_output,
 *  reasoning, ...): the engine reads it, the gateway only stores and forwards it. */
export type ResponseItem = Record<string, unknown>;

export interface ResponsesRequest {
  body: Record<string, unknown>;
  model: string;
  stream: boolean;
  /** `store` (default true, as OpenAI's). */
  store: boolean;
  previousResponseId: string | undefined;
  /** `input` as items: a string is one user message. */
  input: ResponseItem[];
}

const invalid = invalidField;

/** Fields with a value the gateway cannot serve: refused, never ignored. */
const UNSUPPORTED: Record<string, (v: unknown) => boolean> = {
  // Background responses need a job queue the gateway does not keep.
  background: (v) => v === true,
  // The Conversations API's objects are not stored; previous_response_id chains turns.
  conversation: (v) => v !== undefined && v !== null,
  // Stored prompt templates live on OpenAI's platform (vLLM refuses them too).
  prompt: (v) => v !== undefined && v !== null,
};

export function parseResponsesRequest(text: string): ResponsesRequest {
  const body = modelBody(text);
  for (const [field, refused] of Object.entries(UNSUPPORTED)) {
    if (refused(body[field])) throw invalid(field, "is not supported by this gateway", "unsupported_parameter");
  }
  optional(body, "stream", "boolean");
  optional(body, "store", "boolean");
  optional(body, "instructions", "string");
  optional(body, "previous_response_id", "string");
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null && !(Number.isInteger(max) && (max as number) >= 1)) throw invalid("max_output_tokens", "must be an integer of at least 1");
  return {
    body,
    model: body.model,
    stream: body.stream === true,
    store: body.store !== false,
    previousResponseId: typeof body.previous_response_id === "string" ? body.previous_response_id : undefined,
    input: inputItems(body.input),
  };
}

function optional(body: Record<string, unknown>, field: string, type: "boolean" | "string"): void {
  const v = body[field];
  if (v !== undefined && v !== null && typeof v !== type) throw invalid(field, `must be a ${type}`);
}

function inputItems(input: unknown): ResponseItem[] {
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  if (!Array.isArray(input) || input.length === 0) throw invalid("input", "must be a string or a non-empty array of input items");
  return input.map((item, i) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw invalid(`input[${i}]`, "must be an object");
    const it = item as ResponseItem;
    if (it.type === undefined && typeof it.role === "string") return { type: "message", ...it };
    if (typeof it.type !== "string") throw invalid(`input[${i}].type`, "must be a string");
    return it;
  });
}
