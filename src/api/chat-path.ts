// The gateway's own chat completions path as another surface reaches it (the Messages API on
// models only VllmEngine engines serve goes through it, as vLLM serves Messages): app.ts, which
// composes the surfaces, hands the OpenAI surface's implementation (api/openai/chat-path.ts) to
// the Anthropic routes, so no surface imports another's modules.
import type { GatewayContext } from "../context.js";
import type { JobEndpoint } from "../pd/job.js";

export interface ChatPath {
  /** Serves a POST /v1/chat/completions request, its metrics recorded under `endpoint`. */
  generate(gw: GatewayContext, request: Request, endpoint: JobEndpoint): Promise<Response>;
  /** How many prompt ids the chat path would send a VllmEngine engine for this chat body. */
  promptTokens(gw: GatewayContext, chatBody: Record<string, unknown>): Promise<number>;
}
