import { describe, expect, it } from "vitest";
import { memberValueText, topLevelMembers, withMember } from "../../../src/backends/json-members.js";

describe("topLevelMembers", () => {
  it.each([
    ["{}", []],
    [" { } ", []],
    ['{"a":1}', ["a"]],
    ['{ "a" : 1 , "b":"x,}" }', ["a", "b"]],
    ['{"a":{"b":[1,{"c":"]}"}]},"d":null}', ["a", "d"]],
    ['{"esc\\"aped":"q\\\\","u\\u0041":true}', ['esc"aped', "uA"]],
    ['{"a":1,"a":2}', ["a", "a"]],
    ['{"a":-1.5e3,"b":false}', ["a", "b"]],
  ])("%s -> keys %j", (text, keys) => {
    expect(topLevelMembers(text)?.map((m) => m.key)).toEqual(keys);
  });
  it.each(["[]", '"x"', "1", "", '{"a":1', '{"a":1}x', '{"a" 1}', '{a:1}'])("%j is not an object", (text) => {
    expect(topLevelMembers(text)).toBeUndefined();
  });
  it("spans cover exactly the member text", () => {
    const text = '{"a": {"x": [1, 2]} , "b":"s"}';
    const [a, b] = topLevelMembers(text)!;
    expect(text.slice(a!.start, a!.end)).toBe('"a": {"x": [1, 2]}');
    expect(text.slice(a!.valueStart, a!.end)).toBe('{"x": [1, 2]}');
    expect(text.slice(b!.valueStart, b!.end)).toBe('"s"');
  });
});

describe("memberValueText", () => {
  it.each([
    ['{"kv_transfer_params":{"a": 1,  "b":[2]}}', '{"a": 1,  "b":[2]}'],
    ['{"kv_transfer_params":null}', "null"],
    ['{"x":1}', undefined],
    ['{"kv_transfer_params":{"a":1},"kv_transfer_params":{"b":2}}', '{"b":2}'], // JSON.parse: last wins
  ])("%s -> %s", (text, value) => {
    expect(memberValueText(text, "kv_transfer_params")).toBe(value);
  });
});

describe("withMember", () => {
  it.each([
    ["unchanged when absent and no value", '{ "model":"m",  "n":2 }', undefined, '{ "model":"m",  "n":2 }'],
    ["puts the member first, other bytes as sent", '{ "model":"m",  "n":2 }', '{"x":1}', '{"kv":{"x":1}, "model":"m",  "n":2 }'],
    ["into an empty object", "{}", "{}", '{"kv":{}}'],
    ["into an empty object with spaces", "{ }", "{}", '{"kv":{} }'],
    ["drops a client's member", '{"kv":{"evil":1},"model":"m"}', undefined, '{"model":"m"}'],
    ["drops every duplicate, then adds", '{"kv":1,"model":"m","kv":2}', '{"ok":true}', '{"kv":{"ok":true},"model":"m"}'],
    ["keeps big numbers verbatim", '{"seed":18446744073709551615}', '{"a":1}', '{"kv":{"a":1},"seed":18446744073709551615}'],
  ])("%s", (_name, text, value, expected) => {
    const out = withMember(text, "kv", value);
    expect(out).toBe(expected);
    expect(() => JSON.parse(out!)).not.toThrow();
  });
  it("refuses non-objects", () => {
    expect(withMember("[1]", "kv", "{}")).toBeUndefined();
  });
});
