// Aggregated (non-PD) mode on the OpenAI surface: a model served by `regular` openai-http
// engines is proxied to one engine, one leg, with the engine_* error codes (the decode
// codes' twins: there is no prefill/decode split to name).
import type { EventSink } from "../../metrics/events.js";
import { readLegText, startLeg, type EngineLeg, type HttpEngine } from "../../backends/openai-http.js";
import { clientCancelledError, GatewayError } from "../../pd/errors.js";
import { buildEngineBody, type OpenAiRoute } from "../../pd/http-bodies.js";
import { errorText, legStatusError, passedThroughStatus, upstreamErrorMessage, UpstreamStatusError } from "../../pd/http-errors.js";
import { MAX_ERROR_BODY_BYTES } from "../../pd/http-sequential.js";

export interface AggregatedInput {
  route: OpenAiRoute;
  clientText: string;
  headers: Headers;
  model: string;
  engine: HttpEngine;
  clientSignal: AbortSignal;
  waitUntil(promise: Promise<unknown>): void;
  events: EventSink;
}

export async function runAggregated(input: AggregatedInput): Promise<{ response: Response; leg: EngineLeg }> {
  const { engine, events, model } = input;
  const outcome = (status: number) => events.emit({ type: "engine_outcome", model, engine: engine.name, leg: "regular", status });
  const leg = startLeg({
    engine,
    route: input.route,
    // No handoff here, but a client's KV params are still dropped: only the gateway sets them.
    body: buildEngineBody(input.clientText, undefined),
    headers: input.headers,
    clientSignal: input.clientSignal,
    waitUntil: input.waitUntil,
  });
  let response: Response;
  try {
    response = await leg.head;
  } catch (err) {
    if (input.clientSignal.aborted) throw clientCancelledError();
    outcome(502);
    throw new GatewayError("engine_request_failed", 502, `Engine transport error: ${errorText(err)}`);
  }
  if (input.clientSignal.aborted) throw clientCancelledError();
  if (!response.ok) {
    outcome(response.status);
    const mapped = legStatusError("engine", passedThroughStatus(response.status));
    let message: string;
    try {
      message = upstreamErrorMessage(await readLegText(leg, MAX_ERROR_BODY_BYTES));
    } catch (err) {
      leg.close();
      if (input.clientSignal.aborted) throw clientCancelledError();
      throw new UpstreamStatusError("engine_read_failed", mapped.status, `Engine server error: ${errorText(err)}`);
    }
    throw new UpstreamStatusError(mapped.code, mapped.status, message);
  }
  outcome(200);
  return { response, leg };
}
