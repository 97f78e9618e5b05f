// GET /v1/responses/{id}/input_items, the pure parts: the stored items as list entries
// (ids, content parts, status), paging by item id in either order, and the query's checks.
import { describe, expect, it } from "vitest";
import { inputItemsPage, listedItems, type InputItemsQuery } from "../../../src/conversations/input-items.js";
import { parseInputItemsQuery } from "../../../src/api/openai/responses-input-items.js";

type Json = Record<string, unknown>;

describe("listedItems", () => {
  it("gives each item an id (its own kept), a message's string content as a part, and a status", () => {
    const items = listedItems(
      [
        { type: "message", role: "user", content: "hi" },
        { type: "message", id: "msg_1", role: "assistant", content: "hello", status: "completed" },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "42" },
        { type: "reasoning", id: "rs_9", summary: [], content: [{ type: "reasoning_text", text: "hm" }] },
        { type: "message", role: "assistant", content: "ok" },
      ],
      "resp_abc",
    );
    expect(items).toEqual([
      { type: "message", id: "msg_abc_in0", role: "user", content: [{ type: "input_text", text: "hi" }], status: "completed" },
      { type: "message", id: "msg_1", role: "assistant", content: [{ type: "output_text", text: "hello", annotations: [] }], status: "completed" },
      { type: "function_call", id: "fc_abc_in2", call_id: "c1", name: "f", arguments: "{}", status: "completed" },
      { type: "function_call_output", id: "fco_abc_in3", call_id: "c1", output: "42", status: "completed" },
      { type: "reasoning", id: "rs_9", summary: [], content: [{ type: "reasoning_text", text: "hm" }] },
      { type: "message", id: "msg_abc_in5", role: "assistant", content: [{ type: "output_text", text: "ok", annotations: [] }], status: "completed" },
    ]);
  });
});

describe("inputItemsPage", () => {
  const items: Json[] = ["a", "b", "c", "d", "e"].map((id) => ({ id, type: "message" }));
  const ids = (q: Partial<InputItemsQuery>) => {
    const page = inputItemsPage(items, { order: "desc", limit: 20, ...q });
    return "unknownCursor" in page ? page : { ids: page.data.map((i) => i.id).join(""), first: page.first_id, last: page.last_id, more: page.has_more };
  };
  it.each<[string, Partial<InputItemsQuery>, unknown]>([
    ["desc by default: newest first", {}, { ids: "edcba", first: "e", last: "a", more: false }],
    ["asc", { order: "asc" }, { ids: "abcde", first: "a", last: "e", more: false }],
    ["a limit leaves more", { limit: 2 }, { ids: "ed", first: "e", last: "d", more: true }],
    ["after, desc: the older ones", { after: "d", limit: 2 }, { ids: "cb", first: "c", last: "b", more: true }],
    ["after, asc", { order: "asc", after: "c" }, { ids: "de", first: "d", last: "e", more: false }],
    ["after the last: empty", { order: "asc", after: "e" }, { ids: "", first: null, last: null, more: false }],
    ["before, asc: the nearest ones", { order: "asc", before: "e", limit: 2 }, { ids: "cd", first: "c", last: "d", more: true }],
    ["after and before", { order: "asc", after: "a", before: "e" }, { ids: "bcd", first: "b", last: "d", more: false }],
    ["an unknown after", { after: "zz" }, { unknownCursor: "after" }],
    ["an unknown before", { before: "zz" }, { unknownCursor: "before" }],
  ])("%s", (_, q, want) => {
    expect(ids(q)).toEqual(want);
  });

  it("the list object's shape", () => {
    expect(inputItemsPage(items, { order: "asc", limit: 1 })).toEqual({ object: "list", data: [items[0]], first_id: "a", last_id: "a", has_more: true });
  });
});

describe("parseInputItemsQuery", () => {
  const parse = (qs: string) => parseInputItemsQuery(new URLSearchParams(qs));
  it.each<[string, InputItemsQuery]>([
    ["", { order: "desc", limit: 20 }],
    ["order=asc&limit=100&after=msg_1", { order: "asc", limit: 100, after: "msg_1" }],
    ["before=x&include[]=message.input_image.image_url", { order: "desc", limit: 20, before: "x" }],
  ])("%j", (qs, want) => {
    expect(parse(qs)).toEqual(want);
  });

  it.each([
    ["order=up", "order"],
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=2.5", "limit"],
    ["limit=", "limit"],
    ["starting_after=x", "starting_after"],
  ])("%j is a 400 naming %s", (qs, param) => {
    expect(() => parse(qs)).toThrow(expect.objectContaining({ status: 400, param }));
  });
});
