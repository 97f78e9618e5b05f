// The deploy check (scripts/deploy-check.ts): the bundle of every wrangler.toml environment
// deploys (wrangler deploy --dry-run, offline), fits the Workers size limits, and has the
// bindings the code needs. Both dry runs run in parallel, about 10 s together.
import { describe, expect, it } from "vitest";
import { checkConfig, checkEnvironment, configWarnings, LIMITS, parseTotalUpload, report, type ReadConfig } from "../../scripts/deploy-check.js";

type Config = ReadConfig;

function config(over: Record<string, unknown> = {}): Config {
  return {
    name: "vllm-edge-gateway-production",
    analytics_engine_datasets: [{ binding: "METRICS", dataset: "vllm_edge_gateway" }],
    durable_objects: { bindings: [{ name: "REGISTRY", class_name: "EngineRegistry" }] },
    migrations: [{ tag: "v1", new_sqlite_classes: ["EngineRegistry"] }],
    vars: { DEV_METRICS: "off", GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "api_keys" }, models: {} }) },
    vpc_services: [],
    services: [],
    ...over,
  } as Config;
}

describe("deploy check: wrangler.toml environments", () => {
  it("top level and production bundle offline, within limits, with METRICS and REGISTRY", { timeout: 90_000 }, async () => {
    const results = await Promise.all(["", "production"].map((env) => checkEnvironment(env)));
    console.log(report(results));
    for (const r of results) {
      expect(r.errors, `${r.env || "top level"}:\n${r.output}`).toEqual([]);
      expect(r.rawBytes).toBeGreaterThan(0);
      expect(r.rawBytes).toBeLessThanOrEqual(LIMITS.uncompressed);
      expect(r.gzipBytes).toBeLessThanOrEqual(LIMITS.gzipPaid);
    }
    expect(results.map((r) => r.workerName)).toEqual(["vllm-edge-gateway", "vllm-edge-gateway-production"]);
  });
});

describe("deploy check: rules", () => {
  it("accepts a complete production environment", () => {
    expect(checkConfig(config(), "production", true)).toEqual({ errors: [], warnings: [] });
  });

  it("names each binding the code needs when an environment lacks it", () => {
    const { errors } = checkConfig(config({ analytics_engine_datasets: [], durable_objects: { bindings: [] } }), "production", false);
    expect(errors.join("\n")).toMatch(/METRICS/);
    expect(errors.join("\n")).toMatch(/REGISTRY/);
  });

  it("wants EngineRegistry created as a SQLite class", () => {
    const { errors } = checkConfig(config({ migrations: [{ tag: "v1", new_classes: ["EngineRegistry"] }] }), "", false);
    expect(errors).toEqual([expect.stringMatching(/new_sqlite_classes/)]);
  });

  it("refuses dev metrics and an open data plane in production only", () => {
    const dev = config({ vars: { DEV_METRICS: "on", GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, models: {} }) } });
    expect(checkConfig(dev, "production", false).errors).toHaveLength(2);
    expect(checkConfig(dev, "", false).errors).toEqual([]);
  });

  it("checks engine bindings against the declared VPC bindings (error only with strict)", () => {
    const gw = { auth: { data_plane: "api_keys" }, models: { m: { prefill: [{ url: "http://p.internal:8000", binding: "VLLM_PRIVATE" }], decode: [{ url: "http://d.internal:8000" }] } } };
    const missing = config({ vars: { GATEWAY_CONFIG: JSON.stringify(gw) } });
    expect(checkConfig(missing, "production", false).warnings).toEqual([expect.stringMatching(/models\.m\.prefill\.0 names binding "VLLM_PRIVATE"/)]);
    expect(checkConfig(missing, "production", true).errors).toHaveLength(1);
    const declared = config({ vars: { GATEWAY_CONFIG: JSON.stringify(gw) }, vpc_services: [{ binding: "VLLM_PRIVATE", service_id: "s" }] });
    expect(checkConfig(declared, "production", true)).toEqual({ errors: [], warnings: [] });
  });

  it("reads wrangler's upload size and its configuration warnings", () => {
    const out = [
      "",
      " ⛅️ wrangler 4.86.0",
      "\x1b[33m▲ \x1b[43;33m[\x1b[43;30mWARNING\x1b[43;33m]\x1b[0m \x1b[1mProcessing wrangler.toml configuration:\x1b[0m",
      "",
      "    - Unexpected fields found in analytics_engine_datasets[0] field: \"remote\"",
      "",
      "",
      "Total Upload: 1339.82 KiB / gzip: 244.40 KiB",
    ].join("\n");
    expect(parseTotalUpload(out)).toEqual({ rawBytes: Math.round(1339.82 * 1024), gzipBytes: Math.round(244.4 * 1024) });
    expect(configWarnings(out)).toEqual(['- Unexpected fields found in analytics_engine_datasets[0] field: "remote"']);
    expect(configWarnings("Total Upload: 1 KiB / gzip: 1 KiB")).toEqual([]);
  });
});
