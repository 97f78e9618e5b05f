// The JSON scanner the formats find call ends with: complete, incomplete (more text may
// finish it) and invalid, for text that may still be growing.
import { describe, expect, it } from "vitest";
import { INCOMPLETE, INVALID, jsonObjectMembers, minifyJson, scanJsonValue } from "../../../src/parsers/json-text.js";

describe("scanJsonValue", () => {
  const table: [string, number, boolean?][] = [
    ['{"a": [1, 2, {"b": "x}"}]} tail', 26],
    ['{"a": 1', INCOMPLETE],
    ['{"a": "x\\', INCOMPLETE],
    ['{"a": "\\u00', INCOMPLETE],
    ['{"a": tr', INCOMPLETE],
    ["[1, 2", INCOMPLETE],
    ["12", INCOMPLETE], // a top-level number may grow
    ["12", 2, true],
    ["-", INCOMPLETE],
    ['{"a": invalid}', INVALID],
    ['{"a" 1}', INVALID],
    ['{"a": 01}', INVALID],
    ['{"a": "raw\nnewline"}', INVALID],
    ['{"a": "\\x"}', INVALID],
    ["[1,]", INVALID],
    ["{}", 2],
    ["[]", 2],
    ['  "s"', 5],
    ["null ", 4],
    ["1.5e3]", 5],
  ];
  it.each(table)("%j -> %i", (text, want, final) => expect(scanJsonValue(text, 0, final ?? false)).toBe(want));
});

it("minifyJson drops whitespace outside strings only, keeping numbers and escapes as written", () => {
  expect(minifyJson('{ "a b" : [ 1.50 , "x\\"  y" ],\n "c": 12345678901234567890 }')).toBe('{"a b":[1.50,"x\\"  y"],"c":12345678901234567890}');
});

it("jsonObjectMembers gives each member's raw text, the first of duplicates", () => {
  const m = jsonObjectMembers('{"name": "f", "arguments": {"x": [1, 2]}, "name": "g"}');
  expect(m && Object.fromEntries(m)).toEqual({ name: '"f"', arguments: '{"x": [1, 2]}' });
  expect(jsonObjectMembers("[1]")).toBeUndefined();
});
