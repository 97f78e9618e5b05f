// Accept or refuse, never ignore (ARCHITECTURE decision 15), for a Responses request served
// through chat completions: every top-level field is carried into the chat request, read by
// the gateway, accepted with no effect (saying why), or refused with a 400 naming it when it
// holds anything but its default. A field this table does not know is refused: on this path
// nothing would read it. Pure.
import { GatewayError } from "../../core/errors.js";

type Json = Record<string, unknown>;

type Handling = { kind: "carried"; to: string } | { kind: "no_effect"; why: string } | { kind: "refused_unless"; passes: (v: unknown) => boolean; why: string };

const carried = (to: string): Handling => ({ kind: "carried", to });
const noEffect = (why: string): Handling => ({ kind: "no_effect", why });
const refusedUnless = (why: string, passes: (v: unknown) => boolean): Handling => ({ kind: "refused_unless", passes, why });

/** The include values this path can serve. */
const INCLUDES = new Set(["message.output_text.logprobs"]);

export const VIA_CHAT_FIELDS: Readonly<Record<string, Handling>> = {
  model: carried("model"),
  input: carried("messages"),
  instructions: carried("the system message"),
  stream: carried("stream (the gateway writes the Responses events)"),
  store: carried("gateway: the response store"),
  previous_response_id: carried("gateway: the conversation is expanded from the store"),
  max_output_tokens: carried("max_tokens"),
  temperature: carried("temperature"),
  top_p: carried("top_p"),
  top_logprobs: carried("top_logprobs (with include message.output_text.logprobs)"),
  include: refusedUnless("only message.output_text.logprobs can be included", (v) => Array.isArray(v) && v.every((x) => INCLUDES.has(x as string))),
  text: carried("text.format as response_format"),
  tools: carried("tools (function tools)"),
  tool_choice: carried("tool_choice"),
  parallel_tool_calls: carried("parallel_tool_calls"),
  reasoning: carried("reasoning.effort as reasoning_effort"),
  user: carried("user"),
  metadata: noEffect("echoed in the response object, as OpenAI does; not sent to the model"),
  safety_identifier: noEffect("identifies the end user to OpenAI; no effect on generation"),
  prompt_cache_key: noEffect("OpenAI's cache routing hint; the gateway's own prefix routing applies"),
  prompt_cache_retention: noEffect("OpenAI's cache retention; engines keep their prefix cache as they do"),
  max_tool_calls: noEffect("it bounds built-in tool calls, and this path serves function tools only"),
  stream_options: noEffect("include_obfuscation: the gateway adds no obfuscation padding"),
  background: refusedUnless("no job queue (refused before this path too)", (v) => v === false),
  service_tier: refusedUnless("the gateway has one tier", (v) => v === "auto" || v === "default"),
  truncation: refusedUnless("the conversation is never truncated here: a longer one is refused", (v) => v === "disabled"),
  // vLLM's sampling extensions of ResponsesRequest, which the chat path takes as they are.
  top_k: carried("top_k"),
  seed: carried("seed"),
  stop: carried("stop"),
  ignore_eos: carried("ignore_eos"),
  presence_penalty: carried("presence_penalty"),
  frequency_penalty: carried("frequency_penalty"),
  repetition_penalty: carried("repetition_penalty"),
};

/** Refuses, by name, every field the chat path cannot serve (absent and null always pass). */
export function refuseUnservedFields(body: Json): void {
  for (const [field, v] of Object.entries(body)) {
    if (v === undefined || v === null) continue;
    const h = VIA_CHAT_FIELDS[field];
    if (!h) throw new GatewayError("unsupported_parameter", 400, `${field}: is not supported on this model's engines (its Responses API goes through chat completions)`, undefined, field);
    if (h.kind === "refused_unless" && !h.passes(v)) throw new GatewayError("unsupported_parameter", 400, `${field}: ${JSON.stringify(v)} is not supported on this model's engines: ${h.why}`, undefined, field);
  }
}
