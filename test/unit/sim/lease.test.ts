// The lease on a finished prefill's handoff is the engine's VLLM_NIXL_ABORT_REQUEST_TIMEOUT
// (480 s in older vLLM, 30 s in newer): a per-engine setting (`leaseMs`), counted in
// leasesExpired when it frees blocks; and the per-engine stats a fault benchmark reads.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  DEFAULT_LEASE_MS, VLLM_NIXL_ABORT_REQUEST_TIMEOUT_NEWER_MS, VLLM_NIXL_ABORT_REQUEST_TIMEOUT_OLDER_MS, engineConfig, validateClusterSpec,
} from "../../../sim/spec.js";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, connectClient, generate, prefillInit, resetAll, stats, waitFor } from "./helpers.js";

const PROMPT = Array.from({ length: 32 }, (_, i) => `l${i}`).join(" "); // 2 blocks
const SHORT_LEASE_MS = 500;

describe("the lease setting", () => {
  it("defaults to the newer vLLM value, 30 s; the older 480 s is a valid setting", () => {
    expect(VLLM_NIXL_ABORT_REQUEST_TIMEOUT_NEWER_MS).toBe(30_000);
    expect(VLLM_NIXL_ABORT_REQUEST_TIMEOUT_OLDER_MS).toBe(480_000);
    expect(DEFAULT_LEASE_MS).toBe(VLLM_NIXL_ABORT_REQUEST_TIMEOUT_NEWER_MS);
    expect(engineConfig({ name: "p", role: "prefill", kvConnector: "NixlConnector" }).leaseMs).toBe(30_000);
    const older = { name: "p", role: "prefill", kvConnector: "NixlConnector", leaseMs: VLLM_NIXL_ABORT_REQUEST_TIMEOUT_OLDER_MS } as const;
    expect(() => validateClusterSpec({ engines: [older] })).not.toThrow();
    expect(engineConfig(older).leaseMs).toBe(480_000);
    expect(() => validateClusterSpec({ engines: [{ ...older, leaseMs: 0 }] })).toThrow(/engines\[0\]\.leaseMs/);
  });
});

describe("a short lease", () => {
  let c: RunningCluster;
  beforeAll(async () => {
    c = await cluster([
      { name: "short", role: "prefill", kvConnector: "NixlConnector", leaseMs: SHORT_LEASE_MS, latency: FAST },
      { name: "default", role: "prefill", kvConnector: "NixlConnector", latency: FAST },
    ]);
  });
  afterAll(() => c.close());
  beforeEach(() => resetAll(c));

  it("frees an unpulled handoff no sooner than leaseMs and counts leasesExpired; the default engine keeps its own", async () => {
    const started = Date.now();
    await generate(connectClient(c.engine("short")), prefillInit("lease-1", PROMPT));
    expect(await stats(c.engine("short"))).toMatchObject({ blocksPinned: 2, leasesExpired: 0 });
    await generate(connectClient(c.engine("default")), prefillInit("lease-1", PROMPT));
    await waitFor(async () => (await stats(c.engine("short"))).leasesExpired === 1, 3000, "lease expiry");
    expect(Date.now() - started).toBeGreaterThanOrEqual(SHORT_LEASE_MS);
    expect(await stats(c.engine("short"))).toMatchObject({ blocksPinned: 0, handoffsPinned: 0, kvPullsServed: 0, transfersRejected: 0 });
    expect(await stats(c.engine("default"))).toMatchObject({ blocksPinned: 2, handoffsPinned: 1, leasesExpired: 0 });
  });

  it("GET /sim/stats has every per-engine number a fault benchmark reads", async () => {
    const s = await stats(c.engine("short"));
    for (const field of [
      "blocksPinned", "handoffsPinned", "kvPullsServed", "transfersRejected", "leasesExpired", "abortsIgnored", "activeRequests",
    ] as const) {
      expect(typeof s[field], field).toBe("number");
    }
  });
});
