// The pure half of the routing snapshot: merging registry engines into the config's pools and
// the shared-state lookups.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/load.js";
import { buildView, mergeModels, toEngineConfig } from "../../../src/routing/snapshot.js";
import type { RegistryEngine, RegistrySnapshot } from "../../../src/routing/registry-types.js";

const config = parseConfig(
  JSON.stringify({
    models: { m: { policy: { decode: "random" }, prefill: [{ name: "p", url: "http://p:1" }], decode: [{ name: "d", url: "http://d:1" }] } },
    breaker: { failure_threshold: 2, success_threshold: 1, timeout_secs: 30 },
  }),
);

const reg = (over: Partial<RegistryEngine>): RegistryEngine => ({
  id: "r", model: "m", role: "decode", url: "http://r:1", transport: "connect", labels: {}, status: "active",
  discovered: { kv_connector: "NixlConnector" }, created_at: "x", updated_at: "x", ...over,
});

const data = (over: Partial<RegistrySnapshot> = {}): RegistrySnapshot => ({ epoch: "e", version: 3, engines: [], health: {}, breakers: {}, ...over });

describe("mergeModels", () => {
  it("appends active engines to their pool, creates unknown models with default policies, skips draining ones", () => {
    const merged = mergeModels(config.models, [
      reg({ id: "r1" }),
      reg({ id: "r2", status: "draining" }),
      reg({ id: "r3", model: "new", role: "regular", transport: "openai-http", kv_connector: "NixlConnector", labels: { a: "b" } }),
      reg({ id: "r4", role: "encode" }),
    ]);
    expect(merged.m!.policy.decode).toBe("random");
    expect(merged.m!.decode.map((e) => e.name)).toEqual(["d", "r1"]);
    expect(merged.m!.encode.map((e) => e.name)).toEqual(["r4"]);
    expect(merged.m!.prefill).toEqual(config.models.m!.prefill);
    expect(merged.new).toEqual({
      policy: { prefill: "round_robin", decode: "round_robin", regular: "round_robin" },
      pd: { decode_only_max_prompt_tokens: 0 },
      sse_relay: "native",
      generate_relay: "native",
      apis_via_chat: false,
      prefill: [], decode: [], encode: [],
      regular: [{ name: "r3", url: "http://r:1", transport: "openai-http", kv_connector: "NixlConnector", labels: { a: "b" } }],
    });
    expect(config.models.m!.decode.map((e) => e.name)).toEqual(["d"]);
    expect(config.models.new).toBeUndefined();
  });

  it("returns the config's own models when there is nothing active to add", () => {
    expect(mergeModels(config.models, [])).toBe(config.models);
    expect(mergeModels(config.models, [reg({ status: "draining" })])).toBe(config.models);
  });
});

describe("toEngineConfig", () => {
  it("carries overrides only, never discovered metadata", () => {
    expect(toEngineConfig(reg({ dp_rank: 1, dp_size: 2, bootstrap_port: 8998, kv_engine_id: "k" }))).toEqual({
      name: "r", url: "http://r:1", transport: "connect", labels: {}, dp_rank: 1, dp_size: 2, bootstrap_port: 8998, kv_engine_id: "k",
    });
  });
});

describe("buildView", () => {
  it("is the config alone before any registry data", () => {
    const v = buildView(config, undefined);
    expect(v.models).toBe(config.models);
    expect(v.version).toBe(0);
    expect(v.health("p")).toBeUndefined();
    expect(v.breaker("p")).toBeUndefined();
  });

  it("looks up shared health and breakers; an open breaker past its timeout reads half-open", () => {
    const now = Date.now();
    const d = data({
      health: { p: { status: "not_ready", consecutiveFailures: 3, consecutiveSuccesses: 0, pendingProbes: 0 } },
      breakers: {
        p: { state: "open", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: now - 31_000 },
        d: { state: "open", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: now },
      },
    });
    const v = buildView(config, d);
    expect(v.version).toBe(3);
    expect(v.health("p")?.status).toBe("not_ready");
    expect(v.health("d")).toBeUndefined();
    expect(v.breaker("p")).toBe("half_open");
    expect(v.breaker("d")).toBe("open");
    // Reading did not rewrite the shared data.
    expect(d.breakers.p!.state).toBe("open");
  });

  it("says nothing about health or breakers when they are disabled", () => {
    const off = { ...config, health: { ...config.health, disabled: true }, breaker: { ...config.breaker, disabled: true } };
    const v = buildView(off, data({ health: { p: { status: "failed", consecutiveFailures: 9, consecutiveSuccesses: 0, pendingProbes: 0 } }, breakers: { p: { state: "open", consecutiveFailures: 0, consecutiveSuccesses: 0, changedAt: Date.now() } } }));
    expect(v.health("p")).toBeUndefined();
    expect(v.breaker("p")).toBeUndefined();
  });
});

describe("poisoned registry entries", () => {
  it("routes models and names that are Object.prototype keys like any other", () => {
    const merged = mergeModels(config.models, [reg({ id: "toString", model: "constructor", role: "regular" }), reg({ id: "valueOf", model: "hasOwnProperty" })]);
    expect(Object.keys(merged).sort()).toEqual(["constructor", "hasOwnProperty", "m"]);
    expect(merged["constructor"]!.regular.map((e) => e.name)).toEqual(["toString"]);
    expect(merged["hasOwnProperty"]!.decode.map((e) => e.name)).toEqual(["valueOf"]);
    const view = buildView(config, data({ engines: [reg({ id: "r1" })], health: {}, breakers: {} }));
    expect(view.health("constructor")).toBeUndefined();
    expect(view.breaker("toString")).toBeUndefined();
  });

  it("skips an entry that breaks the registry's rules and keeps the rest", () => {
    const merged = mergeModels(config.models, [
      reg({ id: "__proto__", model: "__proto__" }),
      reg({ id: "bad-role", role: "leader" as never }),
      reg({ id: "bad-model", model: "a b" }),
      reg({ id: "ok" }),
    ]);
    expect(Object.keys(merged)).toEqual(["m"]);
    expect(merged.m!.decode.map((e) => e.name)).toEqual(["d", "ok"]);
  });
});
