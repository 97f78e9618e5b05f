// One turn of the Responses API, whichever path serves it (the engines' own /v1/responses, or
// chat completions): its id, the expanded conversation, whether it is stored, the response
// object as the client sees it, and the store write.
import type { GatewayContext } from "../../context.js";
import { GatewayError } from "../../core/errors.js";
import { uuidv7 } from "../../core/ids.js";
import { expandConversation } from "./responses-conversation.js";
import type { ResponseItem, ResponsesRequest } from "./responses-request.js";

type Json = Record<string, unknown>;

export interface Turn {
  id: string;
  req: ResponsesRequest;
  /** The expanded input the engine gets (what the store keeps). */
  conversation: ResponseItem[];
  /** Whether this response will be stored. */
  stored: boolean;
}

export async function turnOf(gw: GatewayContext, req: ResponsesRequest): Promise<Turn> {
  let earlier;
  if (req.previousResponseId !== undefined) {
    earlier = gw.responseStore ? await gw.responseStore.get(req.previousResponseId, gw.owner) : undefined;
    if (!earlier) throw responseNotFound(req.previousResponseId, "previous_response_id");
  }
  const conversation = expandConversation(earlier, req.input, gw.config.responses.max_conversation_bytes);
  return { id: `resp_${uuidv7().replaceAll("-", "")}`, req, conversation, stored: req.store && gw.responseStore !== undefined };
}

export function responseNotFound(id: string, param?: string): GatewayError {
  return new GatewayError("response_not_found", 404, `${param ? `${param}: ` : ""}Response with id '${id}' not found.`, undefined, param);
}

/** A response object as the client sees it: the gateway's id, what it stored, the turn it
 *  continues; no KV params. */
export function clientResponse(r: Json, turn: Turn): Json {
  const out: Json = { ...r, id: turn.id, store: turn.stored, previous_response_id: turn.req.previousResponseId ?? null };
  delete out.kv_transfer_params;
  return out;
}

export async function storeTurn(gw: GatewayContext, turn: Turn, response: Json): Promise<void> {
  await gw.responseStore!.put({ id: turn.id, owner: gw.owner, response: JSON.stringify(response), conversation: JSON.stringify(turn.conversation), ttlSecs: gw.config.responses.store_ttl_secs });
}

/** The store write after a stream's last event, off the client's path; a failure is logged. */
export function storeLater(gw: GatewayContext, turn: Turn, response: Json): void {
  gw.waitUntil(storeTurn(gw, turn, response).catch((err) => console.error(JSON.stringify({ msg: "storing a response failed", id: turn.id, error: String(err) }))));
}
