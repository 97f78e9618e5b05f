import { describe, expect, it } from "vitest";
import {
  NIXL_PREFILL_PARAMS_JSON,
  bootstrapHostOf,
  connectorMode,
  effectiveEngineId,
  isMooncakeModern,
  mooncakeDecodeParamsJson,
  mooncakePrefillParamsJson,
} from "../../../src/pd/connector.js";

describe("connectorMode (pd-reference 2.1)", () => {
  it.each([
    [{ kvConnector: "NixlConnector" }, { kind: "nixl" }],
    [{ kvConnector: "MooncakeConnector", kvEngineId: "eng" }, { kind: "mooncake", host: "10.0.0.1", port: 8998, engineId: "eng" }],
    [{ kvConnector: "MooncakeConnector", bootstrapPort: 9000 }, { kind: "mooncake", host: "10.0.0.1", port: 9000 }],
    [{ kvConnector: "mooncakeconnector" }, { kind: "passthrough" }],
    [{ kvConnector: "LMCacheConnectorV1" }, { kind: "passthrough" }],
    [{ kvConnector: "" }, { kind: "passthrough" }],
    [{}, { kind: "passthrough" }],
  ])("%j -> %j", (meta, expected) => {
    expect(connectorMode({ bootstrapHost: "10.0.0.1", ...meta })).toEqual(expected);
  });
  it("no prefill engine -> passthrough", () => expect(connectorMode(undefined)).toEqual({ kind: "passthrough" }));
});

describe("effectiveEngineId (T6)", () => {
  it.each([
    [{ kvEngineId: "eng", dpSize: 2, dpRank: 1 }, "eng_dp1"],
    [{ kvEngineId: "eng", dpSize: 2 }, undefined],
    [{ kvEngineId: "eng", dpSize: 1 }, "eng"],
    [{ kvEngineId: "eng" }, "eng"],
    [{ kvEngineId: "", dpSize: 1 }, undefined],
    [{ dpSize: 4, dpRank: 0 }, undefined],
    [{ kvEngineId: "eng", dpSize: 4, dpRank: 0 }, "eng_dp0"],
  ])("%j -> %s", (meta, expected) => {
    expect(effectiveEngineId(meta)).toBe(expected);
  });
  it("DP>1 unpinned Mooncake falls back to legacy", () => {
    const mode = connectorMode({ kvConnector: "MooncakeConnector", kvEngineId: "eng", dpSize: 2, bootstrapHost: "h" });
    expect(mode).toEqual({ kind: "mooncake", host: "h", port: 8998 });
    expect(isMooncakeModern(mode, true)).toBe(false);
  });
});

describe("params JSON", () => {
  it("NIXL prefill tag has exactly two keys", () => {
    expect(Object.keys(JSON.parse(NIXL_PREFILL_PARAMS_JSON))).toEqual(["do_remote_decode", "do_remote_prefill"]);
  });
  it("Mooncake prefill (3 keys) and decode (5 keys)", () => {
    expect(JSON.parse(mooncakePrefillParamsJson("xfer-1"))).toEqual({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-1" });
    expect(JSON.parse(mooncakeDecodeParamsJson("xfer-1", "eng", "10.0.0.1", 8998))).toEqual({
      do_remote_decode: false,
      do_remote_prefill: true,
      transfer_id: "xfer-1",
      remote_engine_id: "eng",
      remote_bootstrap_addr: "http://10.0.0.1:8998",
    });
    expect(JSON.parse(mooncakeDecodeParamsJson("x", "e", "::1", 1)).remote_bootstrap_addr).toBe("http://[::1]:1");
  });
  it("modern only with engine id and relay", () => {
    const modern = connectorMode({ kvConnector: "MooncakeConnector", kvEngineId: "eng", bootstrapHost: "h" });
    expect(isMooncakeModern(modern, true)).toBe(true);
    expect(isMooncakeModern(modern, false)).toBe(false);
    expect(isMooncakeModern({ kind: "nixl" }, true)).toBe(false);
  });
  it.each([
    ["http://10.0.0.1:8000", "10.0.0.1"],
    ["http://[::1]:8000", "::1"],
    ["https://engine.example:443/x", "engine.example"],
  ])("bootstrapHostOf(%s) = %s", (url, host) => expect(bootstrapHostOf(url)).toBe(host));
});
