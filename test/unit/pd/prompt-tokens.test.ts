import { expect, it } from "vitest";
import { estimatePromptTokens } from "../../../src/pd/prompt-tokens.js";
import { gaugeSum } from "../../../src/routing/engine-loads.js";

it.each([
  ["", 0],
  ["abcd", 1],
  ["abcde", 2],
  ["é", 1], // 2 bytes
  ["日本語", 3], // 9 bytes
  ["😀", 1], // 4 bytes, one surrogate pair
])("estimatePromptTokens(%j) = %i (UTF-8 bytes / 4, rounded up)", (text, n) => {
  expect(estimatePromptTokens(text)).toBe(n);
});

it("gaugeSum adds a gauge's samples across label sets and ignores its other series", () => {
  const text = [
    "# TYPE vllm:num_requests_waiting gauge",
    'vllm:num_requests_waiting{model_name="a"} 3.0',
    'vllm:num_requests_waiting{model_name="b"} 2',
    'vllm:num_requests_waiting_by_reason{reason="x"} 100',
    "vllm:num_requests_running 7",
  ].join("\n");
  expect(gaugeSum(text, "vllm:num_requests_waiting")).toBe(5);
  expect(gaugeSum(text, "vllm:num_requests_running")).toBe(7);
  expect(() => gaugeSum(text, "vllm:absent")).toThrow(/not found/);
});
