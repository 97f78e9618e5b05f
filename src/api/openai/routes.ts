// The OpenAI-compatible surface, mounted under /v1 by app.ts (which sets the gateway context).
import { Hono } from "hono";
import type { Env } from "../../env.js";
import { routedConfig, type GatewayContext } from "../../context.js";
import { handleGeneration } from "./generation.js";
import { modelList } from "./models.js";
import { deleteStoredResponse, getStoredResponse, handleResponses } from "./responses.js";
import { listInputItems } from "./responses-input-items.js";

type OpenAiEnv = { Bindings: Env; Variables: { gateway: GatewayContext } };

export function openaiRoutes() {
  const r = new Hono<OpenAiEnv>();
  r.post("/chat/completions", (c) => handleGeneration(c.get("gateway"), c.req.raw, "/v1/chat/completions"));
  r.post("/completions", (c) => handleGeneration(c.get("gateway"), c.req.raw, "/v1/completions"));
  r.post("/responses", (c) => handleResponses(c.get("gateway"), c.req.raw));
  r.get("/responses/:id", (c) => getStoredResponse(c.get("gateway"), c.req.param("id")));
  r.get("/responses/:id/input_items", (c) => listInputItems(c.get("gateway"), c.req.param("id"), c.req.url));
  r.delete("/responses/:id", (c) => deleteStoredResponse(c.get("gateway"), c.req.param("id")));
  r.get("/models", (c) => c.json(modelList(routedConfig(c.get("gateway")))));
  return r;
}
