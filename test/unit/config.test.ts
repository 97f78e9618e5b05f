import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig } from "../../src/config/load.js";

describe("parseConfig", () => {
  it("applies defaults and names engines", () => {
    const c = parseConfig(JSON.stringify({ models: { m: { prefill: [{ url: "http://127.0.0.1:1" }], decode: [{ url: "http://127.0.0.1:2", name: "d" }] } } }));
    expect(c.models.m!.prefill[0]).toMatchObject({ name: "m/prefill-0", transport: "connect", labels: {} });
    expect(c.models.m!.decode[0]!.name).toBe("d");
    expect(c.limits.max_n).toBe(16);
    expect(c.pd.deferred_abort_max_ms).toBe(25_000);
    expect(c.debug.allow_pd_overrides).toBe(false);
    expect(c.debug.log_paths).toBe(false);
    expect(c.pd.stream_keepalive_ms).toBe(0);
    expect(c.models.m!.sse_relay).toBe("native");
    expect(c.models.m!.tool_parser).toBeUndefined(); // unset: chosen from the model (docs/tools.md)
  });
  it("takes a model's tool and reasoning parsers", () => {
    const c = parseConfig(JSON.stringify({ models: { m: { tool_parser: "qwen3_coder", reasoning_parser: "qwen3" } } }));
    expect([c.models.m!.tool_parser, c.models.m!.reasoning_parser]).toEqual(["qwen3_coder", "qwen3"]);
  });
  it("places engines in the default cluster unless they name a described one", () => {
    const c = parseConfig(JSON.stringify({
      clusters: { eu: { lat: 50.1, lon: 8.7, region: "eu-central" } },
      models: { m: { prefill: [{ url: "http://127.0.0.1:1" }], decode: [{ url: "http://127.0.0.1:2", cluster: "eu" }] } },
    }));
    expect(c.models.m!.prefill[0]!.cluster).toBe("default");
    expect(c.models.m!.decode[0]!.cluster).toBe("eu");
    expect(c.clusters.eu).toEqual({ lat: 50.1, lon: 8.7, region: "eu-central" });
    expect(c.geo).toEqual({ sticky: false, pushback_ms: 2_000 });
  });
  it.each([
    [undefined, /not set/],
    ["{", /not valid JSON/],
    [JSON.stringify({}), /models/],
    [JSON.stringify({ models: { m: { prefill: [{ url: "ftp://x" }] } } }), /models\.m\.prefill\.0\.url/],
    [JSON.stringify({ models: { m: { decode: [{ url: "http://x", transport: "grpc" }] } } }), /models\.m\.decode\.0\.transport/],
    [JSON.stringify({ models: { m: { decode: [{ url: "http://x", bogus: 1 }] } } }), /models\.m\.decode\.0/],
    [JSON.stringify({ models: {}, pd: { deferred_abort_max_ms: 40_000 } }), /pd\.deferred_abort_max_ms/],
    [JSON.stringify({ models: {}, pd: { stream_keepalive_ms: 10 } }), /pd\.stream_keepalive_ms: 0 \(off\) or at least 50/],
    [JSON.stringify({ models: { m: { sse_relay: "raw" } } }), /models\.m\.sse_relay/],
    [JSON.stringify({ models: { m: { tool_parser: "json" } } }), /models\.m\.tool_parser/],
    [JSON.stringify({ models: { m: { reasoning_parser: "kimi" } } }), /models\.m\.reasoning_parser/],
    [JSON.stringify({ models: { m: { tokenizer: { url: "file:///x.zip" } } } }), /models\.m\.tokenizer\.url/],
    [JSON.stringify({ models: { m: { tokenizer: { url: "https://x/t.zip", sha256: "abc" } } } }), /models\.m\.tokenizer\.sha256/],
    [JSON.stringify({ models: { m: { tokenizer: { url: "https://x/t.zip", path: "t" } } } }), /models\.m\.tokenizer/],
    [JSON.stringify({ models: { m: { decode: [{ url: "http://x", cluster: "eu" }] } } }), /models\.m\.decode\.0\.cluster: "eu" is not described in clusters/],
    [JSON.stringify({ models: { m: { decode: [{ url: "http://x", cluster: "eu west" }] } } }), /models\.m\.decode\.0\.cluster: must be 1-64/],
    [JSON.stringify({ models: {}, clusters: { eu: { lat: 91, lon: 0 } } }), /clusters\.eu\.lat/],
    [JSON.stringify({ models: {}, clusters: { eu: { lat: 50 } } }), /clusters\.eu\.lon/],
    [JSON.stringify({ models: {}, geo: { header: "x geo" } }), /geo\.header: must be a header name/],
  ])("rejects %s naming the field", (text, message) => {
    expect(() => parseConfig(text)).toThrow(ConfigError);
    expect(() => parseConfig(text)).toThrow(message);
  });

  it("keeps a model's tokenizer source, with its sha256 in lower case", () => {
    const sha = "AB".repeat(32);
    const c = parseConfig(JSON.stringify({ models: { m: { regular: [{ url: "http://127.0.0.1:1" }], tokenizer: { url: "https://models.test/t.zip", sha256: sha } } } }));
    expect(c.models.m!.tokenizer).toEqual({ url: "https://models.test/t.zip", sha256: "ab".repeat(32) });
  });

  it("takes the config as an object too (GATEWAY_CONFIG written as a TOML table), with the same checks", () => {
    const table = { models: { m: { regular: [{ url: "http://127.0.0.1:1" }] } }, limits: { max_n: 4 } };
    const c = parseConfig(table);
    expect(c.models.m!.regular[0]!.name).toBe("m/regular-0");
    expect(c.limits.max_n).toBe(4);
    expect(() => parseConfig({ models: { m: { regular: [{ urll: "http://127.0.0.1:1" }] } } })).toThrow(/models\.m\.regular\.0/);
    expect(() => parseConfig({ models: { m: { regular: [{ urll: "http://127.0.0.1:1" }] } } })).toThrow(ConfigError);
    expect(() => parseConfig(42 as unknown as string)).toThrow(/JSON text or a table, not a number/);
  });
});

describe("loadConfig", () => {
  it("parses a value once: the same string, the same object, or an equal object handed over anew", () => {
    const text = JSON.stringify({ models: { cache: { regular: [{ url: "http://127.0.0.1:1" }] } } });
    const first = loadConfig(text);
    expect(loadConfig(text)).toBe(first);
    const table = JSON.parse(text) as object;
    const fromTable = loadConfig(table);
    expect(loadConfig(table)).toBe(fromTable);
    expect(loadConfig(JSON.parse(text) as object)).toBe(fromTable);
    const changed = loadConfig({ models: { other: {} } });
    expect(changed).not.toBe(fromTable);
    expect(Object.keys(changed.models)).toEqual(["other"]);
  });
});
