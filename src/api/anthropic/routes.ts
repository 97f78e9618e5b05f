// The Anthropic Messages surface, mounted under /v1 by app.ts beside the OpenAI one.
import { Hono } from "hono";
import type { GatewayContext } from "../../context.js";
import type { Env } from "../../env.js";
import { handleCountTokens, handleMessages } from "./messages.js";

type AnthropicEnv = { Bindings: Env; Variables: { gateway: GatewayContext } };

export function anthropicRoutes() {
  const r = new Hono<AnthropicEnv>();
  r.post("/messages", (c) => handleMessages(c.get("gateway"), c.req.raw));
  r.post("/messages/count_tokens", (c) => handleCountTokens(c.get("gateway"), c.req.raw));
  return r;
}
