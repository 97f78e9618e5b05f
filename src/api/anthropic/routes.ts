// The Anthropic Messages surface, mounted under /v1 by app.ts beside the OpenAI one; `chat` is
// the gateway's chat path, which serves Messages for models only VllmEngine engines serve.
import { Hono } from "hono";
import type { GatewayContext } from "../../context.js";
import type { Env } from "../../env.js";
import type { ChatPath } from "../chat-path.js";
import { handleCountTokens, handleMessages } from "./messages.js";

type AnthropicEnv = { Bindings: Env; Variables: { gateway: GatewayContext } };

export function anthropicRoutes(chat: ChatPath) {
  const r = new Hono<AnthropicEnv>();
  r.post("/messages", (c) => handleMessages(c.get("gateway"), chat, c.req.raw));
  r.post("/messages/count_tokens", (c) => handleCountTokens(c.get("gateway"), chat, c.req.raw));
  return r;
}
