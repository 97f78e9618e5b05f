// The deploy check (scripts/deploy-check.ts): the bundle of every wrangler.toml environment
// deploys (wrangler deploy --dry-run, offline), fits the Workers size limits, has the bindings
// the code and its GATEWAY_CONFIG need, and that config passes the gateway's parser. Both dry
// runs run in parallel, about 10 s together; the temp-copy tests read configs only.
import { afterAll, describe, expect, it } from "vitest";
import {
  checkConfig,
  checkEnvironment,
  checkEnvironmentConfig,
  configWarnings,
  environmentNames,
  LIMITS,
  parseTotalUpload,
  placeholders,
  report,
  type ReadConfig,
} from "../../scripts/deploy-check.js";
import { COMMITTED_WRANGLER, removeWranglerCopies, replaceOnce, wranglerCopy } from "../support/wrangler-copy.js";

afterAll(removeWranglerCopies);

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

describe("deploy check: the committed wrangler.toml", () => {
  it("every environment bundles offline, within limits, with its bindings and a valid GATEWAY_CONFIG", { timeout: 90_000 }, async () => {
    const envs = environmentNames(COMMITTED_WRANGLER);
    expect(envs).toEqual(["", "production"]);
    const results = await Promise.all(envs.map((env) => checkEnvironment(env)));
    console.log(report(results));
    for (const r of results) {
      expect(r.errors, `${r.env || "top level"}:\n${r.output}`).toEqual([]);
      expect(r.rawBytes).toBeGreaterThan(0);
      expect(r.rawBytes).toBeLessThanOrEqual(LIMITS.uncompressed);
      expect(r.gzipBytes).toBeLessThanOrEqual(LIMITS.gzipPaid);
    }
    expect(results.map((r) => r.workerName)).toEqual(["vllm-edge-gateway", "vllm-edge-gateway-production"]);
    // The template's one placeholder is reported, as a warning until --ready.
    expect(results[0]!.warnings).toEqual([]);
    expect(results[1]!.warnings).toEqual([expect.stringMatching(/^\[env\.production\]: vpc_services\[0\]\.service_id is a placeholder \("<vpc service id>"\)/)]);
  });

  it("production is ready to deploy once the placeholder is filled in, and not before", () => {
    expect(checkEnvironmentConfig("production", { ready: true }).errors).toEqual([expect.stringMatching(/vpc_services\[0\]\.service_id is a placeholder/)]);
    const filled = wranglerCopy((t) => replaceOnce(t, 'service_id = "<vpc service id>"', 'service_id = "0199e0a3-7d0c-7000-8000-00000000abcd"'));
    expect(checkEnvironmentConfig("production", { config: filled, ready: true })).toMatchObject({ errors: [], warnings: [] });
  });
});

describe("deploy check: a broken copy of wrangler.toml", () => {
  it("fails when an engine names a binding the environment does not declare", () => {
    const mismatched = wranglerCopy((t) => replaceOnce(t, /^binding = "VLLM_PRIVATE"$/m, 'binding = "VLLM_ELSEWHERE"'));
    expect(checkEnvironmentConfig("production", { config: mismatched }).errors).toEqual([
      expect.stringMatching(/^\[env\.production\]: GATEWAY_CONFIG models\.my-model\.prefill\.0 names binding "VLLM_PRIVATE", which this environment does not declare/),
      expect.stringMatching(/^\[env\.production\]: GATEWAY_CONFIG models\.my-model\.decode\.0 names binding "VLLM_PRIVATE"/),
    ]);
  });

  it("fails on a typo in [env.production]'s GATEWAY_CONFIG, naming the environment and the field", () => {
    const typo = wranglerCopy((t) => replaceOnce(t, '"kv_connector": "NixlConnector", "binding"', '"kv_conector": "NixlConnector", "binding"'));
    expect(checkEnvironmentConfig("production", { config: typo }).errors).toEqual(['[env.production]: GATEWAY_CONFIG models.my-model.prefill.0: Unrecognized key: "kv_conector"']);
    expect(checkEnvironmentConfig("", { config: typo }).errors).toEqual([]);
  });
});

describe("deploy check: rules", () => {
  it("accepts a complete production environment", () => {
    expect(checkConfig(config(), "production", true)).toEqual({ errors: [], warnings: [] });
  });

  it("names each binding the code needs when an environment lacks it", () => {
    const { errors } = checkConfig(config({ analytics_engine_datasets: [], durable_objects: { bindings: [] } }), "production");
    expect(errors.join("\n")).toMatch(/METRICS/);
    expect(errors.join("\n")).toMatch(/REGISTRY/);
  });

  it("wants EngineRegistry created as a SQLite class", () => {
    const { errors } = checkConfig(config({ migrations: [{ tag: "v1", new_classes: ["EngineRegistry"] }] }), "");
    expect(errors).toEqual([expect.stringMatching(/new_sqlite_classes/)]);
  });

  it("refuses dev metrics and an open data plane in production only", () => {
    const dev = config({ vars: { DEV_METRICS: "on", GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, models: {} }) } });
    expect(checkConfig(dev, "production").errors).toHaveLength(2);
    expect(checkConfig(dev, "").errors).toEqual([]);
  });

  it("checks engine bindings against the declared VPC bindings, always as an error", () => {
    const gw = { auth: { data_plane: "api_keys" }, models: { m: { prefill: [{ url: "http://p.internal:8000", binding: "VLLM_PRIVATE" }], decode: [{ url: "http://d.internal:8000" }] } } };
    const missing = config({ vars: { GATEWAY_CONFIG: JSON.stringify(gw) } });
    expect(checkConfig(missing, "production").errors).toEqual([expect.stringMatching(/models\.m\.prefill\.0 names binding "VLLM_PRIVATE"/)]);
    const declared = config({ vars: { GATEWAY_CONFIG: JSON.stringify(gw) }, vpc_services: [{ binding: "VLLM_PRIVATE", service_id: "s" }] });
    expect(checkConfig(declared, "production")).toEqual({ errors: [], warnings: [] });
    const network = config({ vars: { GATEWAY_CONFIG: gw }, vpc_networks: [{ binding: "VLLM_PRIVATE" }] });
    expect(checkConfig(network, "production")).toEqual({ errors: [], warnings: [] });
  });

  it("runs GATEWAY_CONFIG through the gateway's parser, as JSON text or as a TOML table's object", () => {
    const text = config({ vars: { DEV_METRICS: "off", GATEWAY_CONFIG: '{"models": {"m": {"decode": [{"url": "ftp://x"}]}}}' } });
    expect(checkConfig(text, "production").errors).toEqual([expect.stringMatching(/^\[env\.production\]: GATEWAY_CONFIG models\.m\.decode\.0\.url: /)]);
    const table = config({ vars: { GATEWAY_CONFIG: { models: {}, retry: { max_retries: 0 } } } });
    expect(checkConfig(table, "").errors).toEqual([expect.stringMatching(/^the top level: GATEWAY_CONFIG retry\.max_retries: /)]);
    expect(checkConfig(config({ vars: { GATEWAY_CONFIG: { models: {} } } }), "")).toEqual({ errors: [], warnings: [] });
    expect(checkConfig(config({ vars: { GATEWAY_CONFIG: "{" } }), "").errors).toEqual([expect.stringMatching(/^the top level: GATEWAY_CONFIG is not valid JSON/)]);
    expect(checkConfig(config({ vars: {} }), "production").errors).toEqual([expect.stringMatching(/no GATEWAY_CONFIG var/)]);
  });

  it("finds placeholders outside [vars]: warnings, errors when ready", () => {
    const c = config({ vpc_services: [{ binding: "V", service_id: "<vpc service id>" }], vars: { ...config().vars, NOTE: "<not a binding>" } });
    expect(placeholders(c)).toEqual([{ path: "vpc_services[0].service_id", value: "<vpc service id>" }]);
    expect(checkConfig(c, "production").warnings).toHaveLength(1);
    expect(checkConfig(c, "production", true).errors).toEqual([expect.stringMatching(/vpc_services\[0\]\.service_id is a placeholder/)]);
    expect(placeholders({ a: "x<y>", b: ["<>"], c: 1 })).toEqual([{ path: "b[0]", value: "<>" }]);
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
