// The control API (clusters on demand for workerd tests), cluster lifecycle, spec validation
// and the /sim/reset endpoint.
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster } from "../../../sim/cluster.js";
import { startControlServer } from "../../../sim/control.js";
import { validateClusterSpec } from "../../../sim/spec.js";
import { FAST, connectClient, generate, postJson, prefillInit, stats } from "./helpers.js";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let control: { url: string; close(): Promise<void> };

beforeAll(async () => {
  control = await startControlServer();
});
afterAll(() => control.close());

const reachable = (url: string) => fetch(`${url}/health`).then((r) => r.status === 200, () => false);

describe("control server", () => {
  it("creates, lists and deletes clusters", async () => {
    const spec = { engines: [
      { name: "p", role: "prefill", kvConnector: "NixlConnector", grpcPort: 0, latency: FAST },
      { name: "mc", role: "prefill", kvConnector: "MooncakeConnector", kvEngineId: "mc" },
    ] };
    const r = await postJson(`${control.url}/clusters`, spec);
    expect(r.status).toBe(201);
    const created = (await r.json()) as Json;
    expect(created.id).toEqual(expect.any(String));
    expect(created.engines).toHaveLength(2);
    const [pe, mc] = created.engines as Json[];
    expect(pe).toMatchObject({ name: "p", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), grpcUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(pe!.spec.port).toBeGreaterThan(0);
    expect(mc!.bootstrapPort).toBeGreaterThan(0);
    expect(await reachable(pe!.url)).toBe(true);

    const list = (await (await fetch(`${control.url}/clusters`)).json()) as Json[];
    expect(list.map((x) => x.id)).toContain(created.id);

    const del = await fetch(`${control.url}/clusters/${created.id}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect(await reachable(pe!.url)).toBe(false);
    expect((await fetch(`${control.url}/clusters/${created.id}`, { method: "DELETE" })).status).toBe(404);
  });

  it("DELETE /clusters closes them all", async () => {
    const a = (await (await postJson(`${control.url}/clusters`, { engines: [{ name: "a", role: "both", kvConnector: "none" }] })).json()) as Json;
    const b = (await (await postJson(`${control.url}/clusters`, { engines: [{ name: "b", role: "both", kvConnector: "none" }] })).json()) as Json;
    expect((await fetch(`${control.url}/clusters`, { method: "DELETE" })).status).toBe(204);
    expect(await reachable(a.engines[0].url)).toBe(false);
    expect(await reachable(b.engines[0].url)).toBe(false);
    expect(await (await fetch(`${control.url}/clusters`)).json()).toEqual([]);
  });

  it("answers 400 naming the field for bad specs", async () => {
    const cases: [unknown, string][] = [
      [{ engines: [] }, "engines"],
      [{ engines: [{ name: "x", role: "middle", kvConnector: "none" }] }, "engines[0].role"],
      [{ engines: [{ name: "x", role: "decode", kvConnector: "Nixl" }] }, "engines[0].kvConnector"],
      [{ engines: [{ name: "x", role: "decode", kvConnector: "none", latency: { perOutputTokenMs: -1 } }] }, "engines[0].latency.perOutputTokenMs"],
      [{ engines: [{ name: "x", role: "decode", kvConnector: "none" }, { name: "x", role: "decode", kvConnector: "none" }] }, "engines[1].name"],
      [{ engines: [{ name: "x", role: "decode", kvConnector: "none", prot: 1 }] }, "engines[0].prot"],
      [{ engines: [{ name: "x", role: "decode", kvConnector: "none", faults: [{ hang: "yes" }] }] }, "engines[0].faults[0].hang"],
    ];
    for (const [spec, field] of cases) {
      const r = await postJson(`${control.url}/clusters`, spec);
      expect(r.status, field).toBe(400);
      expect(((await r.json()) as Json).error).toContain(field);
    }
    const bad = await fetch(`${control.url}/clusters`, { method: "POST", body: "{" });
    expect(bad.status).toBe(400);
  });

  it("answers 409 when a fixed port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await postJson(`${control.url}/clusters`, { engines: [{ name: "x", role: "both", kvConnector: "none", port }] });
      expect(r.status).toBe(409);
      expect(((await r.json()) as Json).error).toContain(`port ${port}`);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe("startCluster", () => {
  it("rejects invalid specs and leaves nothing listening after a partial start", async () => {
    await expect(startCluster({ engines: [{ name: "", role: "both", kvConnector: "none" }] })).rejects.toThrow("engines[0].name");
    const first = await startCluster({ engines: [{ name: "a", role: "both", kvConnector: "none" }] });
    const taken = first.engines[0]!.spec.port!;
    const second = startCluster({ engines: [{ name: "ok", role: "both", kvConnector: "none", port: 0 }, { name: "clash", role: "both", kvConnector: "none", port: taken }] });
    await expect(second).rejects.toThrow(`port ${taken}`);
    await first.close();
    await first.close(); // idempotent
    expect(await reachable(`http://127.0.0.1:${taken}`)).toBe(false);
  });

  it("engine(name) finds engines and throws for unknown names", async () => {
    const cl = await startCluster({ engines: [{ name: "only", role: "both", kvConnector: "none" }] });
    try {
      expect(cl.engine("only").spec.name).toBe("only");
      expect(() => cl.engine("missing")).toThrow("missing");
    } finally {
      await cl.close();
    }
  });

  it("the default cluster file is a valid spec with the documented engines", async () => {
    const { readFile } = await import("node:fs/promises");
    const spec = validateClusterSpec(JSON.parse(await readFile(new URL("../../../sim/default-cluster.json", import.meta.url), "utf8")));
    expect(spec.engines.map((e) => [e.name, e.role, e.kvConnector, e.port, e.grpcPort, e.model])).toEqual([
      ["prefill-0", "prefill", "NixlConnector", 18100, 18200, "sim-model"],
      ["decode-0", "decode", "NixlConnector", 18101, 18201, "sim-model"],
      ["http-prefill-0", "prefill", "NixlConnector", 18110, undefined, "sim-model-http"],
      ["http-decode-0", "decode", "NixlConnector", 18111, undefined, "sim-model-http"],
      ["qwen3-prefill-0", "prefill", "NixlConnector", 18120, 18220, "Qwen/Qwen3-0.6B"],
      ["qwen3-decode-0", "decode", "NixlConnector", 18121, 18221, "Qwen/Qwen3-0.6B"],
    ]);
  });
});

describe("/sim/reset", () => {
  it("zeroes counters and recent but keeps pins; ?hard=1 frees them", async () => {
    const cl = await startCluster({ engines: [{ name: "p", role: "prefill", kvConnector: "NixlConnector", latency: FAST }], recentRequests: 2 });
    try {
      const e = cl.engine("p");
      const client = connectClient(e);
      for (const id of ["a", "b", "c"]) await generate(client, prefillInit(id, "one two three"));
      let s = await stats(e);
      expect(s.recent.map((r) => r.requestId)).toEqual(["b", "c"]);
      expect(s).toMatchObject({ generateRequests: 3, handoffsPinned: 3 });
      await postJson(`${e.url}/sim/reset`, {});
      s = await stats(e);
      expect(s).toMatchObject({ generateRequests: 0, prefillComputations: 0, recent: [], handoffsPinned: 3 });
      await postJson(`${e.url}/sim/reset?hard=1`, {});
      expect((await stats(e)).handoffsPinned).toBe(0);
    } finally {
      await cl.close();
    }
  });
});
