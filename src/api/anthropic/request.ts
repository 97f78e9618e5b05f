// Checks an Anthropic Messages request (POST /v1/messages, /v1/messages/count_tokens): JSON,
// and the fields the gateway reads or Anthropic's API requires. Every failure is a 400 naming
// the field, rendered in Anthropic's error shape. Pure; the body goes to the engine as sent.
import { invalidField, modelBody } from "../json-body.js";

export interface MessagesRequest {
  text: string;
  body: Record<string, unknown>;
  model: string;
  stream: boolean;
}

const invalid = invalidField;

/** `countTokens`: count_tokens takes no max_tokens. */
export function parseMessagesRequest(text: string, countTokens = false): MessagesRequest {
  const body = modelBody(text);
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw invalid("messages", "must be a non-empty array");
  body.messages.forEach((m, i) => {
    if (typeof m !== "object" || m === null || Array.isArray(m)) throw invalid(`messages[${i}]`, "must be an object");
    const { role, content } = m as Record<string, unknown>;
    if (role !== "user" && role !== "assistant") throw invalid(`messages[${i}].role`, 'must be "user" or "assistant"');
    if (typeof content !== "string" && !Array.isArray(content)) throw invalid(`messages[${i}].content`, "must be a string or an array of content blocks");
  });
  if (!countTokens) {
    const max = body.max_tokens;
    if (max === undefined || max === null) throw invalid("max_tokens", "is required");
    if (!Number.isInteger(max) || (max as number) < 1) throw invalid("max_tokens", "must be an integer of at least 1");
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") throw invalid("stream", "must be a boolean");
  const stops = body.stop_sequences;
  if (stops !== undefined && stops !== null && !(Array.isArray(stops) && stops.every((s) => typeof s === "string"))) throw invalid("stop_sequences", "must be an array of strings");
  if (body.system !== undefined && body.system !== null && typeof body.system !== "string" && !Array.isArray(body.system)) throw invalid("system", "must be a string or an array of text blocks");
  return { text, body, model: body.model, stream: body.stream === true };
}

/** The prompt's text for prefix-affinity policies and the decider's estimate. */
export function messagesText(body: Record<string, unknown>, maxChars = Infinity): string {
  let out = typeof body.system === "string" ? body.system : blocksText(body.system);
  for (const m of body.messages as Record<string, unknown>[]) {
    if (out.length >= maxChars) break;
    out += `\n${typeof m.content === "string" ? m.content : blocksText(m.content)}`;
  }
  return out.length > maxChars ? out.slice(0, maxChars) : out;
}

function blocksText(blocks: unknown): string {
  if (!Array.isArray(blocks)) return "";
  return blocks.map((b) => (typeof b === "object" && b !== null && typeof (b as { text?: unknown }).text === "string" ? (b as { text: string }).text : "")).join("\n");
}
