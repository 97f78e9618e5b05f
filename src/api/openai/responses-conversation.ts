// Conversation state at the edge: a request with previous_response_id continues from the
// stored response, so the engine (which stores nothing) gets the whole conversation as input
// items: the earlier turns' inputs, the stored response's output items, then the new input.
// `instructions` are not carried over from the earlier turn, as OpenAI's API does. Pure.
import { GatewayError } from "../../core/errors.js";
import type { ResponseItem } from "./responses-request.js";

export interface EarlierTurn {
  /** The earlier request's expanded input items (JSON text, as stored). */
  conversation: string;
  /** The earlier response object (JSON text, as stored). */
  response: string;
}

const utf8 = new TextEncoder();

/** The engine's input: the earlier turn's conversation and output, then `input`. Refused with
 *  a 400 when it outgrows `maxBytes` (responses.max_conversation_bytes). */
export function expandConversation(earlier: EarlierTurn | undefined, input: ResponseItem[], maxBytes: number): ResponseItem[] {
  const items = earlier ? [...(JSON.parse(earlier.conversation) as ResponseItem[]), ...outputItems(earlier.response), ...input] : input;
  const bytes = utf8.encode(JSON.stringify(items)).byteLength;
  if (bytes > maxBytes) {
    const param = earlier ? "previous_response_id" : "input";
    throw new GatewayError("conversation_too_large", 400, `${param}: the conversation is ${bytes} bytes, above the limit of ${maxBytes} (responses.max_conversation_bytes)`, undefined, param);
  }
  return items;
}

/** A response's output items as input items of the next turn (messages, function calls,
 *  reasoning: vLLM's ResponsesRequest reads all three back). */
function outputItems(responseText: string): ResponseItem[] {
  const output = (JSON.parse(responseText) as { output?: unknown }).output;
  return Array.isArray(output) ? output.filter((x): x is ResponseItem => typeof x === "object" && x !== null) : [];
}

/** The text of the conversation for prefix-affinity policies and the decider's estimate. */
export function conversationText(instructions: unknown, items: readonly ResponseItem[], maxChars = Infinity): string {
  let out = typeof instructions === "string" ? instructions : "";
  for (const item of items) {
    if (out.length >= maxChars) break;
    const c = item.content ?? item.output ?? item.arguments;
    if (typeof c === "string") out += `\n${c}`;
    else if (Array.isArray(c)) for (const part of c) if (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string") out += `\n${(part as { text: string }).text}`;
  }
  return out.length > maxChars ? out.slice(0, maxChars) : out;
}
