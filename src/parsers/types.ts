// The shapes the output parsers speak: the request's tools as the parsers need them, the
// OpenAI tool call (whole and as a streamed delta), and what one push or a whole reply yields.

/** One entry of the request's `tools`, reduced to what parsing and constraints use. */
export interface ToolSpec {
  name: string;
  /** The function's JSON Schema (`tools[i].function.parameters`), when given. */
  parameters?: Record<string, unknown>;
}

/** A call as a format parser found it: the name and the arguments as a JSON text. */
export interface ParsedCall {
  name: string;
  /** A JSON text; for formats that carry JSON, the model's own text without the
   *  insignificant whitespace (numbers and escapes kept as written). */
  arguments: string;
}

/** OpenAI `message.tool_calls[i]`. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** OpenAI `delta.tool_calls[i]`: the first delta of a call carries id, type and name (with
 *  empty arguments); the later ones carry argument fragments that concatenate to the
 *  call's `arguments`. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function: { name?: string; arguments: string };
}

/** What one push (or the flush) of the streaming parser yields; empty strings and an empty
 *  list when the text so far decides nothing new. */
export interface OutputDelta {
  content: string;
  reasoning: string;
  toolCalls: ToolCallDelta[];
}

/** A whole reply, parsed (non-streamed answers): `content` is null when the reply has no
 *  text outside reasoning and calls, `reasoning` null when there was none. */
export interface ParsedOutput {
  content: string | null;
  reasoning: string | null;
  toolCalls: ToolCall[];
}

export function emptyDelta(): OutputDelta {
  return { content: "", reasoning: "", toolCalls: [] };
}
