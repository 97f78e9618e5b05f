// Non-RPC HTTP routes of an engine: the OpenAI, Responses and Anthropic Messages APIs, /health, the /sim/* control endpoints and
// the NIXL side channel; and the Mooncake bootstrap listener's routes.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SimEngine } from "./engine.js";
import { validateFaultList } from "./faults.js";
import { BodyError, readJson, sendEmpty, sendJson, sendOpenAiError } from "./http-util.js";
import { handleCountTokens, handleMessages } from "./messages-api.js";
import { handleGeneration, handleModels } from "./openai-api.js";
import { handleResponses } from "./responses-api.js";

type Handler = (engine: SimEngine, req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

async function sideChannel(
  engine: SimEngine,
  path: "/sim/kv" | "/sim/mooncake",
  verb: "pull" | "release",
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readJson(req);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return sendJson(res, 400, { error: "body must be a JSON object" });
  }
  const reply = verb === "pull"
    ? engine.servePull(path, body as Record<string, unknown>)
    : engine.serveRelease(path, body as Record<string, unknown>);
  sendJson(res, reply.status, reply.body);
}

const ENGINE_ROUTES: Record<string, Handler> = {
  "GET /health": (e, _req, res) => sendEmpty(res, e.faults.unhealthy ? 503 : 200),
  "GET /v1/models": (e, _req, res) => handleModels(e, res),
  // vLLM's OpenAI server exports Prometheus gauges here (vLLM docs, "Production Metrics":
  // vllm:num_requests_running / vllm:num_requests_waiting, labelled by model_name).
  "GET /metrics": (e, _req, res) => {
    const l = e.loads();
    const label = `{model_name="${e.cfg.model}"}`;
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(
      [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        `vllm:num_requests_running${label} ${l.running}.0`,
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        `vllm:num_requests_waiting${label} ${l.waiting}.0`,
        "",
      ].join("\n"),
    );
  },
  "POST /v1/completions": (e, req, res) => handleGeneration(e, "/v1/completions", req, res),
  "POST /v1/chat/completions": (e, req, res) => handleGeneration(e, "/v1/chat/completions", req, res),
  "POST /v1/responses": (e, req, res) => handleResponses(e, req, res),
  "POST /v1/messages": (e, req, res) => handleMessages(e, req, res),
  "POST /v1/messages/count_tokens": (e, req, res) => handleCountTokens(e, req, res),
  "GET /sim/stats": (e, _req, res) => sendJson(res, 200, e.snapshot()),
  "POST /sim/reset": (e, _req, res, url) => {
    const hard = url.searchParams.get("hard");
    e.reset(hard === "1" || hard === "true");
    sendJson(res, 200, e.snapshot());
  },
  "GET /sim/faults": (e, _req, res) => sendJson(res, 200, e.faults.list()),
  "POST /sim/faults": async (e, req, res) => {
    const body = await readJson(req);
    let faults;
    try {
      faults = validateFaultList(body ?? [], "faults");
    } catch (err) {
      return sendJson(res, 400, { error: (err as Error).message });
    }
    e.faults.replace(faults);
    sendJson(res, 200, e.faults.list());
  },
  "DELETE /sim/faults": (e, _req, res) => {
    e.faults.replace([]);
    sendJson(res, 200, []);
  },
  "POST /sim/kv/pull": (e, req, res) => sideChannel(e, "/sim/kv", "pull", req, res),
  "POST /sim/kv/release": (e, req, res) => sideChannel(e, "/sim/kv", "release", req, res),
};

const BOOTSTRAP_ROUTES: Record<string, Handler> = {
  "GET /health": (_e, _req, res) => sendEmpty(res, 200),
  "POST /sim/mooncake/pull": (e, req, res) => sideChannel(e, "/sim/mooncake", "pull", req, res),
  "POST /sim/mooncake/release": (e, req, res) => sideChannel(e, "/sim/mooncake", "release", req, res),
};

function dispatch(routes: Record<string, Handler>, openAiErrors: boolean) {
  return (engine: SimEngine, req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://sim");
    const handler = routes[`${req.method} ${url.pathname}`];
    const fail = (status: number, message: string) => {
      if (res.headersSent) return void res.destroy();
      if (openAiErrors) sendOpenAiError(res, status, message);
      else sendJson(res, status, { error: message });
    };
    if (!handler) {
      const known = Object.keys(routes).some((k) => k.endsWith(` ${url.pathname}`));
      return known ? fail(405, `method ${req.method} not allowed on ${url.pathname}`) : fail(404, `no route ${url.pathname}`);
    }
    Promise.resolve()
      .then(() => handler(engine, req, res, url))
      .catch((err: unknown) => (err instanceof BodyError ? fail(400, err.message) : fail(500, `sim error: ${String(err)}`)));
  };
}

/** Handler for everything on the engine's HTTP port that is not a VllmEngine RPC. */
export const engineHttpHandler = dispatch(ENGINE_ROUTES, true);
/** Handler for a Mooncake engine's bootstrap listener. */
export const bootstrapHandler = dispatch(BOOTSTRAP_ROUTES, false);
