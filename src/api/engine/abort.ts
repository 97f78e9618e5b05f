// The Abort RPC on the gateway's VllmEngine surface. A request this isolate serves is aborted
// through its legs (routing/client-requests.ts, pd/leg.ts): by the same rule as a client that
// left, so decode holding a KV handoff gets its Abort after its first frame, and on the
// engines serving it now, after a retry or a decode failover. Any other id goes to every
// VllmEngine engine of the model in `x-model` (the request may be on another isolate).
// An Abort reaches only requests started with the caller's own data-plane credential:
// entries record their owner, and engine-side request ids carry the credential's tag, so even
// an Abort fanned out to engines by id cannot end another key's request. Bounded: at most
// MAX_ABORT_IDS ids per call, at most a few calls in flight per key, and coalesced per engine
// (routing/abort-batches.ts: one RPC in flight per engine, carrying the ids of every call
// that arrived meanwhile).
import { Code, type HandlerContext } from "@connectrpc/connect";
import { GatewayError } from "../../core/errors.js";
import type { EngineTarget } from "../../core/types.js";
import { engineRequestIdFor } from "../../routing/client-requests.js";
import { VLLM_ENGINE_TRANSPORTS } from "../../routing/families.js";
import { enginesOf } from "../../routing/select.js";
import { requestIdProblem } from "./client-request.js";
import { gatewayOf } from "./gateway-of.js";
import type { GatewayContext } from "../../context.js";

export const MAX_ABORT_IDS = 64;

export async function abort(req: { requestIds: string[] }, ctx: HandlerContext): Promise<Record<string, never>> {
  const gw = gatewayOf(ctx);
  const model = ctx.requestHeader.get("x-model");
  if (!model) throw new GatewayError("model_required", 400, "x-model: header required for Abort (it names the engines to reach)", Code.InvalidArgument, "x-model");
  if (req.requestIds.length > MAX_ABORT_IDS) {
    throw new GatewayError("too_many_ids", 400, `request_ids: at most ${MAX_ABORT_IDS} per call, got ${req.requestIds.length}`, Code.InvalidArgument, "request_ids");
  }
  const bad = req.requestIds.findIndex((id) => requestIdProblem(id) !== undefined);
  if (bad >= 0) {
    // No Generate could have started under it: refused, never fanned out to engines.
    throw new GatewayError("invalid_request", 400, `request_ids[${bad}]: ${requestIdProblem(req.requestIds[bad]!)}`, Code.InvalidArgument, `request_ids[${bad}]`);
  }
  // The per-key limit on calls in flight is applied by the router, before the body is read.
  const perSecond = gw.config.limits.abort_ids_per_second_per_key;
  if (!gw.isolate.clientRequests.spendAbortIds(gw.owner, new Set(req.requestIds).size, perSecond)) {
    throw new GatewayError("abort_rate_limited", 429, `Abort: at most ${perSecond} request ids per second per API key (limits.abort_ids_per_second_per_key); retry shortly`, Code.ResourceExhausted);
  }
  await sendAborts(gw, model, req.requestIds);
  return {};
}

async function sendAborts(gw: GatewayContext, model: string, requestIds: readonly string[]): Promise<void> {
  if (!Object.hasOwn(gw.routing.models, model)) throw new GatewayError("model_not_found", 404, `The model '${model}' does not exist`, Code.NotFound, "x-model");
  // Served here: its legs abort it (the call answers once that is under way). Elsewhere
  // (another isolate, or already over): every VllmEngine engine of the model, under the
  // caller's own scoped id, one RPC per engine with all the ids meant for it.
  const elsewhere = [...new Set(requestIds)].filter((clientId) => !gw.isolate.clientRequests.requestAbort(clientId, gw.owner));
  const byEngine = new Map<string, { engine: EngineTarget; ids: string[] }>();
  if (elsewhere.length > 0) {
    for (const engine of enginesOf(gw.routing, model, VLLM_ENGINE_TRANSPORTS)) {
      byEngine.set(engine.name, { engine, ids: elsewhere.map((clientId) => engineRequestIdFor(gw.owner, clientId)) });
    }
  }
  const sent = await Promise.all([...byEngine.values()].map(({ engine, ids }) => gw.isolate.abortBatches.abort(engine, ids)));
  if (sent.includes(false)) {
    throw new GatewayError("abort_rate_limited", 429, "Abort: too many ids are waiting for this model's engines; retry shortly", Code.ResourceExhausted);
  }
}
