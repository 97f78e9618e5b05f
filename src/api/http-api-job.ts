// The Responses and Messages APIs' requests to openai-http engines, on the one pipeline: the
// job built by the one builder (the engine's own endpoint; one sequence, so fan-out never
// skips prefill here), the PD decision and the cluster told to the response headers, the
// backend to the metrics writer.
import type { GatewayContext } from "../context.js";
import type { Surface } from "../core/types.js";
import type { EngineHttpRoute } from "../backends/openai-bodies.js";
import type { LegStream } from "../pd/leg.js";
import { prefillDecisionHeader } from "../pd/skip.js";
import { openAiHttpFamily } from "../routing/families.js";
import { runPipeline } from "../routing/pipeline.js";
import { buildJob } from "./job.js";
import type { RequestMetrics } from "./request-metrics.js";

export interface HttpApiRequest {
  model: string;
  surface: Surface;
  route: Extract<EngineHttpRoute, "/v1/responses" | "/v1/messages">;
  /** The body the engines get (JSON text, and parsed). */
  text: string;
  body: Record<string, unknown>;
  stream: boolean;
  /** The prompt's text, for the decider's estimate and prefix-affinity policies. */
  promptText(): string;
  requestId: string;
  /** The client's request (its headers: routing key, PD override, trace context). */
  request: Request;
}

export async function runHttpApiJob(gw: GatewayContext, r: HttpApiRequest, metrics: RequestMetrics, headers: Headers): Promise<{ stream: LegStream<Uint8Array>; leg: "engine" | "decode" }> {
  const job = buildJob(gw, {
    model: r.model,
    surface: r.surface,
    endpoint: r.route,
    payload: { route: r.route, text: r.text, body: r.body, stream: r.stream, clientHeaders: r.request.headers },
    prompt: () => ({ text: r.promptText() }),
    fanout: 1,
    hasMmInputs: false,
    streamed: r.stream,
    clientRequestId: r.requestId,
    headers: r.request.headers,
  });
  metrics.forJob(job);
  let backend: "pd" | "regular" = "regular";
  const { stream } = await runPipeline(gw.pipeline(r.model), {
    job,
    family: openAiHttpFamily(gw.isolate),
    onDecision: (reason) => headers.set("x-pd-prefill", prefillDecisionHeader(reason)),
    onBackend: (b) => metrics.backend((backend = b)),
    onCluster: (cluster) => headers.set("x-gateway-cluster", cluster),
  });
  return { stream, leg: backend === "regular" ? "engine" : "decode" };
}
