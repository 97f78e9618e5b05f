// GET /v1/responses/{id}/input_items: the items a stored response was generated from (the
// whole expanded conversation: earlier turns' inputs and outputs, then this request's input),
// as OpenAI's list object, paged by item id. Pure; the store object runs it next to the rows.

type Item = Record<string, unknown>;

export interface InputItemsQuery {
  /** OpenAI's default is "desc": the newest item first. */
  order: "asc" | "desc";
  limit: number;
  /** An item id: the page starts after it, in `order`. */
  after?: string;
  /** An item id: the page ends before it, in `order`. */
  before?: string;
}

export interface InputItemsPage {
  object: "list";
  data: Item[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** A cursor that names no item of the response. */
export interface UnknownCursor {
  unknownCursor: "after" | "before";
}

const PREFIX: Record<string, string> = { message: "msg", function_call: "fc", function_call_output: "fco", reasoning: "rs" };

/** The items as list entries: every one with an id (an item sent without one gets
 *  `<prefix>_<response hex>_in<position>`, stable for that response), a message's string
 *  content as one text part, and a status where OpenAI's item types have one. */
export function listedItems(items: readonly Item[], responseId: string): Item[] {
  const hex = responseId.startsWith("resp_") ? responseId.slice("resp_".length) : responseId;
  return items.map((item, i) => {
    const out: Item = { ...item };
    if (typeof out.id !== "string" || out.id === "") out.id = `${PREFIX[String(out.type)] ?? "item"}_${hex}_in${i}`;
    if (out.type === "message" && typeof out.content === "string") {
      out.content = [out.role === "assistant" ? { type: "output_text", text: out.content, annotations: [] } : { type: "input_text", text: out.content }];
    }
    if ((out.type === "message" || out.type === "function_call" || out.type === "function_call_output") && out.status === undefined) out.status = "completed";
    return out;
  });
}

/** One page of `items` (already listed) for `q`. */
export function inputItemsPage(items: readonly Item[], q: InputItemsQuery): InputItemsPage | UnknownCursor {
  let ordered = q.order === "desc" ? [...items].reverse() : [...items];
  if (q.after !== undefined) {
    const at = ordered.findIndex((it) => it.id === q.after);
    if (at < 0) return { unknownCursor: "after" };
    ordered = ordered.slice(at + 1);
  }
  if (q.before !== undefined) {
    const at = ordered.findIndex((it) => it.id === q.before);
    if (at < 0) return { unknownCursor: "before" };
    ordered = ordered.slice(0, at);
  }
  // Paging backwards (before, no after): the items nearest the cursor.
  const data = q.before !== undefined && q.after === undefined ? ordered.slice(Math.max(0, ordered.length - q.limit)) : ordered.slice(0, q.limit);
  return {
    object: "list",
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: ordered.length > data.length,
  };
}
