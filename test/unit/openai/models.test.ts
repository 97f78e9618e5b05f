import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/load.js";
import { modelAvailability } from "../../../src/api/model-availability.js";
import { modelList } from "../../../src/api/openai/models.js";
import { engineRequestHeaders, engineRouteUrl, relayResponseHeaders } from "../../../src/backends/openai-http.js";

const e = (transport: string) => ({ url: "http://10.0.0.1:8000", transport });
const config = parseConfig(
  JSON.stringify({
    models: {
      pd: { prefill: [e("openai-http")], decode: [e("openai-http")] },
      agg: { regular: [e("openai-http")] },
      grpc: { prefill: [e("connect")], decode: [e("grpc-web")] },
      mixed: { prefill: [e("connect"), e("openai-http")], decode: [e("openai-http"), e("grpc-web")] },
      half: { prefill: [e("openai-http")], decode: [e("connect")] },
      empty: {},
    },
  }),
);

describe("modelAvailability", () => {
  it.each([
    ["pd", "openai"],
    ["agg", "openai"],
    ["mixed", "openai"],
    ["grpc", "engine-only"],
    ["half", "incomplete"],
    ["empty", "incomplete"],
    ["nope", "unknown"],
    ["constructor", "unknown"],
    ["__proto__", "unknown"],
  ])("%s -> %s", (model, expected) => {
    expect(modelAvailability(config, model)).toBe(expected);
  });
});

describe("modelList", () => {
  it("lists every configured model with the surfaces that serve it", () => {
    const list = modelList(config);
    expect(list.object).toBe("list");
    expect(list.data.map((m) => [m.id, m.surfaces])).toEqual([
      ["agg", ["openai"]],
      ["empty", []],
      ["grpc", ["openai", "engine"]],
      ["half", ["engine"]],
      ["mixed", ["openai", "engine"]],
      ["pd", ["openai"]],
    ]);
    expect(list.data[0]).toMatchObject({ object: "model", owned_by: "vllm-edge-gateway" });
  });
});

describe("openai-http helpers", () => {
  it.each([
    ["http://h:8000", "http://h:8000/v1/completions"],
    ["http://h:8000/", "http://h:8000/v1/completions"],
    ["http://h:8000/v1", "http://h:8000/v1/completions"],
    ["http://h:8000/v1/", "http://h:8000/v1/completions"],
    ["https://proxy/vllm-a", "https://proxy/vllm-a/v1/completions"],
  ])("engineRouteUrl(%s)", (base, url) => {
    expect(engineRouteUrl(base, "/v1/completions")).toBe(url);
  });
  it("relayResponseHeaders drops encoding, length and hop-by-hop headers", () => {
    const h = relayResponseHeaders(new Headers({ "content-type": "text/event-stream", "content-encoding": "gzip", "content-length": "12", connection: "keep-alive", "x-request-id": "r" }));
    expect([...h.keys()].sort()).toEqual(["content-type", "x-request-id"]);
  });
  it("engineRequestHeaders keeps trace context and never the client's credentials", () => {
    const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const h = engineRequestHeaders(new Headers({ authorization: "Bearer k", traceparent: tp, cookie: "c" }), "rid", true);
    expect(Object.fromEntries(h)).toEqual({ accept: "text/event-stream", "content-type": "application/json", traceparent: tp, "x-request-id": "rid" });
  });
});
