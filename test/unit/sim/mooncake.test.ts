// Mooncake handoffs: by transfer_id through the bootstrap listener (engine id known), and the
// legacy typed host/port form that pulls by request id, including its n>1 hazard.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningCluster } from "../../../sim/types.js";
import { FAST, cluster, connectClient, generate, resetAll, stats, type EngineClient } from "./helpers.js";

let c: RunningCluster;
let prefill: EngineClient;
let decode: EngineClient;
const PROMPT = Array.from({ length: 20 }, (_, i) => `m${i}`).join(" "); // 20 tokens -> 2 blocks
const LEN = 20;

beforeAll(async () => {
  c = await cluster([
    { name: "mp", role: "prefill", kvConnector: "MooncakeConnector", kvEngineId: "mc-p", latency: FAST },
    { name: "md", role: "decode", kvConnector: "MooncakeConnector", kvEngineId: "mc-d", latency: FAST },
  ]);
  prefill = connectClient(c.engine("mp"));
  decode = connectClient(c.engine("md"));
});
afterAll(() => c.close());
beforeEach(() => resetAll(c));

const bootstrapAddr = () => `http://127.0.0.1:${c.engine("mp").bootstrapPort}`;
const prefillReq = (id: string, kvJson?: string) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT },
  samplingParams: { maxTokens: 1, ignoreEos: true }, kvTransferParamsJson: kvJson,
});
const decodeReq = (id: string, extra: object) => ({
  requestId: id, input: { case: "text" as const, value: PROMPT }, samplingParams: { maxTokens: 3, ignoreEos: true }, stream: true, ...extra,
});

describe("Mooncake with an engine id", () => {
  it("starts a bootstrap listener on a free port", () => {
    expect(c.engine("mp").bootstrapPort).toBeGreaterThan(0);
    expect(c.engine("mp").spec.bootstrapPort).toBe(c.engine("mp").bootstrapPort);
  });

  it("pins under the transfer id, returns no params, and serves one pull by transfer id", async () => {
    const r = await generate(prefill, prefillReq("x-1", JSON.stringify({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-1" })));
    expect(r.completes[0]!.kvTransferParamsJson).toBeUndefined();
    expect(await stats(c.engine("mp"))).toMatchObject({ blocksPinned: 2, handoffsPinned: 1, promptTokensComputed: LEN });
    const kv = { do_remote_decode: false, do_remote_prefill: true, transfer_id: "xfer-1", remote_engine_id: "mc-p", remote_bootstrap_addr: bootstrapAddr() };
    await generate(decode, decodeReq("x-1", { kvTransferParamsJson: JSON.stringify(kv) }));
    expect(await stats(c.engine("mp"))).toMatchObject({ kvPullsServed: 1, blocksPinned: 0 });
    expect(await stats(c.engine("md"))).toMatchObject({ promptTokensComputed: 0, kvPullsCompleted: 1, kvRecomputes: 0 });
    // Consumed: a second decode with the same transfer id recomputes.
    await generate(decode, decodeReq("x-1b", { kvTransferParamsJson: JSON.stringify(kv) }));
    expect((await stats(c.engine("mp"))).kvPullsRefused).toBe(1);
    expect(await stats(c.engine("md"))).toMatchObject({ kvRecomputes: 1, promptTokensComputed: LEN });
  });

  it("refuses a pull naming the wrong engine id", async () => {
    await generate(prefill, prefillReq("x-2", JSON.stringify({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-2" })));
    const kv = { do_remote_decode: false, do_remote_prefill: true, transfer_id: "xfer-2", remote_engine_id: "someone-else", remote_bootstrap_addr: bootstrapAddr() };
    await generate(decode, decodeReq("x-2", { kvTransferParamsJson: JSON.stringify(kv) }));
    expect(await stats(c.engine("mp"))).toMatchObject({ kvPullsRefused: 1, blocksPinned: 2 });
    expect((await stats(c.engine("md"))).kvRecomputes).toBe(1);
  });

  it("serves Mooncake pulls only on the bootstrap listener, not the engine port", async () => {
    await generate(prefill, prefillReq("x-3", JSON.stringify({ do_remote_decode: true, do_remote_prefill: false, transfer_id: "xfer-3" })));
    const kv = { do_remote_decode: false, do_remote_prefill: true, transfer_id: "xfer-3", remote_engine_id: "mc-p", remote_bootstrap_addr: c.engine("mp").url };
    await generate(decode, decodeReq("x-3", { kvTransferParamsJson: JSON.stringify(kv) }));
    expect((await stats(c.engine("md"))).kvRecomputes).toBe(1);
    expect((await stats(c.engine("mp"))).blocksPinned).toBe(2);
  });
});

describe("Mooncake legacy (typed host/port)", () => {
  it("a prefill engine pins every request under its id; the decode pulls by its own id", async () => {
    await generate(prefill, prefillReq("legacy-1"));
    expect((await stats(c.engine("mp"))).blocksPinned).toBe(2);
    await generate(decode, decodeReq("legacy-1", { kvTransferParams: { remoteHost: "127.0.0.1", remotePort: c.engine("mp").bootstrapPort! } }));
    expect(await stats(c.engine("mp"))).toMatchObject({ kvPullsServed: 1, blocksPinned: 0 });
    expect(await stats(c.engine("md"))).toMatchObject({ promptTokensComputed: 0, kvPullsCompleted: 1 });
  });

  it("a decode whose request id differs from the prefill's is refused and recomputes", async () => {
    await generate(prefill, prefillReq("legacy-2"));
    await generate(decode, decodeReq("legacy-other", { kvTransferParams: { remoteHost: "127.0.0.1", remotePort: c.engine("mp").bootstrapPort! } }));
    expect((await stats(c.engine("mp"))).kvPullsRefused).toBe(1);
    expect(await stats(c.engine("md"))).toMatchObject({ kvRecomputes: 1, promptTokensComputed: LEN });
  });

  it("n>1 decode: every sibling after the first is refused (kvSiblingHazards = n-1)", async () => {
    await generate(prefill, prefillReq("legacy-3"));
    const r = await generate(decode, {
      ...decodeReq("legacy-3", { kvTransferParams: { remoteHost: "127.0.0.1", remotePort: c.engine("mp").bootstrapPort! } }),
      samplingParams: { maxTokens: 2, n: 4, ignoreEos: true },
    });
    expect(r.completes).toHaveLength(4);
    expect(await stats(c.engine("md"))).toMatchObject({ kvSiblingHazards: 3, kvRecomputes: 3, promptTokensComputed: 3 * LEN });
    expect(await stats(c.engine("mp"))).toMatchObject({ kvPullsServed: 1, kvPullsRefused: 3 });
  });
});
