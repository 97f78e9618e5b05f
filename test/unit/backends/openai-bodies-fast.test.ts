// buildEngineBody with the parsed body (no rescan) gives the same bytes as the scanning path.
import { describe, expect, it } from "vitest";
import { buildEngineBody } from "../../../src/backends/openai-bodies.js";

describe("buildEngineBody: the parsed fast path is byte-identical", () => {
  it.each([
    '{"model":"m","prompt":"hi"}',
    ' { "model" : "m" , "messages" : [ {"role":"user","content":"{\\"x\\":1}"} ] } ',
    "{}",
    " {  } ",
    '{"kv_transfer_params":{"remote_host":"evil"},"model":"m"}',
    '{"model":"m","kv_transfer_params":null,"kv_transfer_params":{"a":1}}',
    '{"model":"m","kv\\u005ftransfer_params":{"a":1}}',
  ])("%s", (text) => {
    for (const params of [undefined, '{"do_remote_prefill":true}']) {
      expect(buildEngineBody(text, params, JSON.parse(text) as Record<string, unknown>)).toBe(buildEngineBody(text, params));
    }
  });
});
