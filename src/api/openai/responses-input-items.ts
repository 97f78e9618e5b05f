// GET /v1/responses/{id}/input_items: the stored response's input items for the key that
// stored it, as OpenAI's list object (conversations/input-items.ts pages them inside the store
// object). The query is checked here: every bad value is a 400 naming the parameter.
import type { GatewayContext } from "../../context.js";
import type { InputItemsQuery } from "../../conversations/input-items.js";
import { openAiErrorResponse } from "../../errors/openai.js";
import { toGatewayError } from "../../errors/render.js";
import { invalidField } from "../json-body.js";
import { responseNotFound } from "./responses-turn.js";

/** The query parameters OpenAI's endpoint takes; `include` has nothing to add here (the
 *  gateway keeps no images or file search results), so any value is accepted. */
const KNOWN = new Set(["order", "limit", "after", "before", "include", "include[]"]);

export function parseInputItemsQuery(params: URLSearchParams): InputItemsQuery {
  for (const key of params.keys()) if (!KNOWN.has(key)) throw invalidField(key, "is not a parameter of this endpoint", "unsupported_parameter");
  const order = params.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalidField("order", 'must be "asc" or "desc"');
  const limitText = params.get("limit") ?? "20";
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100) throw invalidField("limit", "must be an integer from 1 to 100");
  const q: InputItemsQuery = { order, limit };
  for (const cursor of ["after", "before"] as const) {
    const v = params.get(cursor);
    if (v !== null && v !== "") q[cursor] = v;
  }
  return q;
}

export async function listInputItems(gw: GatewayContext, id: string, url: string): Promise<Response> {
  try {
    const query = parseInputItemsQuery(new URL(url).searchParams);
    const page = gw.responseStore ? await gw.responseStore.inputItems(id, gw.owner, query) : undefined;
    if (!page) throw responseNotFound(id);
    if ("unknownCursor" in page) throw invalidField(page.unknownCursor, `no input item of response '${id}' has the id '${query[page.unknownCursor]}'`);
    return Response.json(page);
  } catch (err) {
    return openAiErrorResponse(toGatewayError(err, "Responses API"));
  }
}
