// The "clusters" phase of `npm run bench` (issue 31; `npm run bench -- --only clusters`): what
// choosing the cluster by the client's location buys, and how long a dead cluster costs.
// Two clusters, a (Frankfurt) and b (Virginia), each a NIXL prefill/decode pair over the OpenAI
// API, in their own sim process. The gateway runs next to the client, so "a client near a" is
// modelled by giving cluster a a small network delay and b a large one (and the other way
// round for clients near b): the delay is added to every request the cluster's engines get.
// Two gateways from the same frozen bundle: "geo" (engines in their clusters, geo.header) and
// "flat" (the same four engines as one pool each, as before clusters; random picks). TTFT p50 of
// streamed completions per placement and gateway; then, with clients near b and steady load
// on the geo gateway, cluster b is killed: how long until traffic runs on a, and what failed.
// Writes bench/results/clusters.json and the "Clusters" section of docs/benchmarks.md.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import type { ClusterSpec, EngineSpec } from "../sim/types.js";
import type { BenchContext } from "./context.js";
import { agentFor, post } from "./http.js";
import { machineBusyCores } from "./proc.js";
import { percentile, round } from "./stats.js";
import { startGateway, startSimControl } from "./targets.js";

const MODEL = "cl-model";
const NEAR_MS = 5;
const FAR_MS = 60;
const GEO = "x-client-geo";
const PLACES = { a: "50.1,8.7", b: "38.9,-77.4" } as const;
const REQUESTS = 40;
const MAX_TOKENS = 8;
const PROMPT = Array.from({ length: 256 }, (_, i) => `w${i % 97}`).join(" ");
const ENGINES = ["pa", "da", "pb", "db"] as const;

type Place = keyof typeof PLACES;

export interface ClustersResult {
  date: string;
  machine: { cores: number; busyCoresBefore: number };
  delays: { nearMs: number; farMs: number };
  requests: number;
  ttft: { clientsNear: Place; gateway: "geo" | "flat"; p50Ms: number; p99Ms: number; servedBy: Record<string, number>; errors: number }[];
  /** Pulls the sim refused because decode was in another cluster than prefill (flat pools). */
  crossClusterPulls: { geo: number; flat: number };
  failover: {
    requests: number;
    failed: number;
    /** Failures among requests that started after the kill. */
    failedAfterKill: number;
    /** Kill to the first response served by cluster a. */
    firstOnAMs: number | null;
    /** Kill to the end of the last failed request (0: none failed). */
    lastFailureMs: number;
    /** TTFT p50 of requests by when they started: before the kill (served by b), in the
     *  first second after it, the second one, and from 2 s on. */
    ttftP50Ms: { beforeKill: number | null; first: number | null; second: number | null; later: number | null };
    /** Requests started after the kill, by the cluster that served them. */
    servedAfterKill: Record<string, number>;
  };
}

const engine = (name: string, cluster: Place): EngineSpec => ({
  name, role: name.startsWith("p") ? "prefill" : "decode", kvConnector: "NixlConnector", kvEngineId: name, model: MODEL, cluster,
});

interface SimCluster {
  id: string;
  url(name: string): string;
}

async function control(base: string, path: string, body: unknown): Promise<Response> {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`sim ${path}: ${res.status} ${await res.text()}`);
  return res;
}

export async function measureClusters(ctx: BenchContext, buildDir: string): Promise<ClustersResult> {
  const busyCoresBefore = await machineBusyCores(1_000);
  const sim = await startSimControl();
  const spec: ClusterSpec = { recentRequests: 1, clusters: { a: {}, b: {} }, engines: ENGINES.map((n) => engine(n, n[1] as Place)) };
  const created = (await (await control(sim.controlUrl, "/clusters", spec)).json()) as { id: string; engines: { name: string; url: string }[] };
  const simCluster: SimCluster = { id: created.id, url: (n) => created.engines.find((e) => e.name === n)!.url };
  const delay = (cluster: Place, ms: number) => control(sim.controlUrl, `/clusters/${simCluster.id}/delay`, { cluster, networkDelayMs: ms });
  const entry = (n: string, withCluster: boolean) => ({ name: n, url: simCluster.url(n), transport: "openai-http", kv_connector: "NixlConnector", ...(withCluster ? { cluster: n[1] } : {}) });
  const gatewayConfig = (geo: boolean) => ({
    auth: { data_plane: "open" },
    ...(geo ? { clusters: { a: { lat: 50.1, lon: 8.7 }, b: { lat: 38.9, lon: -77.4 } }, geo: { header: GEO } } : {}),
    // Random picks: round-robin over one pair per cluster would pair pa with da and pb with db
    // in lockstep, an accident of this two-engine setup, not what a flat pool does.
    models: { [MODEL]: { policy: { prefill: "random", decode: "random" }, prefill: ["pa", "pb"].map((n) => entry(n, geo)), decode: ["da", "db"].map((n) => entry(n, geo)) } },
  });
  ctx.log("clusters: two sim clusters (a NIXL pair each) and two gateways (geo, flat) from the same bundle");
  const geo = await startGateway(buildDir, gatewayConfig(true), "clusters-geo");
  const flat = await startGateway(buildDir, gatewayConfig(false), "clusters-flat");
  try {
    const ttft: ClustersResult["ttft"] = [];
    let crossFlat = 0;
    let crossGeo = 0;
    for (const near of ["a", "b"] as const) {
      await delay("a", near === "a" ? NEAR_MS : FAR_MS);
      await delay("b", near === "b" ? NEAR_MS : FAR_MS);
      const runs = { geo: [] as Sample[], flat: [] as Sample[] };
      for (let i = 0; i < REQUESTS; i++) {
        // Interleaved request by request, so machine noise lands on both alike.
        const x0 = await crossPulls(simCluster);
        runs.geo.push(await one(geo.target.base, near, `g-${near}-${i}`));
        const x1 = await crossPulls(simCluster);
        runs.flat.push(await one(flat.target.base, near, `f-${near}-${i}`));
        const x2 = await crossPulls(simCluster);
        crossGeo += x1 - x0;
        crossFlat += x2 - x1;
      }
      for (const [gateway, samples] of Object.entries(runs) as ["geo" | "flat", Sample[]][]) {
        const ok = samples.filter((s) => s.ok);
        const servedBy: Record<string, number> = {};
        for (const s of ok) servedBy[s.cluster ?? "?"] = (servedBy[s.cluster ?? "?"] ?? 0) + 1;
        ttft.push({ clientsNear: near, gateway, p50Ms: round(percentile(ok.map((s) => s.ttftMs), 50), 1), p99Ms: round(percentile(ok.map((s) => s.ttftMs), 99), 1), servedBy, errors: samples.length - ok.length });
        ctx.log(`clusters: clients near ${near}, ${gateway}: TTFT p50 ${ttft.at(-1)!.p50Ms} ms`);
      }
    }
    const failover = await killUnderLoad(ctx, geo.target.base, () => control(sim.controlUrl, `/clusters/${simCluster.id}/kill`, { cluster: "b" }), delay);
    const result: ClustersResult = {
      date: new Date().toISOString(),
      machine: { cores: os.cpus().length, busyCoresBefore: round(busyCoresBefore, 2) },
      delays: { nearMs: NEAR_MS, farMs: FAR_MS },
      requests: REQUESTS,
      ttft,
      crossClusterPulls: { geo: crossGeo, flat: crossFlat },
      failover,
    };
    await mkdir("bench/results", { recursive: true });
    await writeFile("bench/results/clusters.json", `${JSON.stringify(result, null, 2)}\n`);
    await writeSection(result);
    ctx.log("clusters: wrote bench/results/clusters.json and the \"Clusters\" section of docs/benchmarks.md");
    return result;
  } finally {
    await geo.dev.stop();
    await flat.dev.stop();
    await sim.stop();
  }
}

async function crossPulls(c: SimCluster): Promise<number> {
  let n = 0;
  for (const name of ["pa", "pb"]) {
    const res = await fetch(`${c.url(name)}/sim/stats`).catch(() => undefined);
    if (res?.ok) n += ((await res.json()) as { crossClusterPulls?: number }).crossClusterPulls ?? 0;
  }
  return n;
}

interface Sample {
  ok: boolean;
  ttftMs: number;
  cluster: string | null;
  startedAt: number;
  endedAt: number;
}

async function one(base: string, near: Place, id: string): Promise<Sample> {
  const body = JSON.stringify({ model: MODEL, prompt: `${id} ${PROMPT}`, max_tokens: MAX_TOKENS, ignore_eos: true, stream: true });
  const startedAt = performance.now();
  try {
    const x = await post(`${base}/v1/completions`, body, { agent: agentFor(`clusters-${base}`, 8), headers: { "content-type": "application/json", [GEO]: PLACES[near] }, sse: true, keepBody: true, timeoutMs: 30_000 });
    const ok = x.status === 200 && (x.body ?? "").includes("[DONE]") && !(x.body ?? "").includes('"error"');
    const header = x.headers["x-gateway-cluster"];
    return { ok, ttftMs: x.events?.[0] ?? x.totalMs, cluster: typeof header === "string" ? header : null, startedAt, endedAt: performance.now() };
  } catch {
    return { ok: false, ttftMs: Number.NaN, cluster: null, startedAt, endedAt: performance.now() };
  }
}

/** Clients near b, 4 at a time on the geo gateway; b is killed 2 s in; 5 s more after it. */
async function killUnderLoad(ctx: BenchContext, base: string, kill: () => Promise<unknown>, delay: (c: Place, ms: number) => Promise<unknown>): Promise<ClustersResult["failover"]> {
  await delay("a", FAR_MS);
  await delay("b", NEAR_MS);
  const samples: Sample[] = [];
  const t0 = performance.now();
  const endAt = t0 + 7_000;
  let killedAt = Number.POSITIVE_INFINITY;
  let seq = 0;
  const killer = (async () => {
    await new Promise((r) => setTimeout(r, 2_000));
    killedAt = performance.now();
    await kill();
    ctx.log("clusters: cluster b killed under load");
  })();
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (performance.now() < endAt) samples.push(await one(base, "b", `k-${seq++}`));
  }));
  await killer;
  const failed = samples.filter((s) => !s.ok);
  const firstOnA = samples.filter((s) => s.ok && s.cluster === "a" && s.endedAt >= killedAt).map((s) => s.endedAt - killedAt);
  const p50 = (xs: number[]) => (xs.length ? round(percentile(xs, 50), 1) : null);
  const window = (from: number, to: number) => p50(samples.filter((s) => s.ok && s.startedAt >= killedAt + from && s.startedAt < killedAt + to).map((s) => s.ttftMs));
  const servedAfterKill: Record<string, number> = {};
  for (const s of samples.filter((x) => x.ok && x.startedAt >= killedAt)) servedAfterKill[s.cluster ?? "?"] = (servedAfterKill[s.cluster ?? "?"] ?? 0) + 1;
  return {
    requests: samples.length,
    failed: failed.length,
    failedAfterKill: failed.filter((s) => s.startedAt >= killedAt).length,
    firstOnAMs: firstOnA.length ? round(Math.min(...firstOnA), 1) : null,
    lastFailureMs: failed.length ? round(Math.max(0, Math.max(...failed.map((s) => s.endedAt)) - killedAt), 1) : 0,
    ttftP50Ms: { beforeKill: window(-2_000, 0), first: window(0, 1_000), second: window(1_000, 2_000), later: window(2_000, Number.POSITIVE_INFINITY) },
    servedAfterKill,
  };
}

const START = "<!-- clusters:start -->";
const END = "<!-- clusters:end -->";

async function writeSection(r: ClustersResult): Promise<void> {
  const rows = r.ttft.map((t) => `| ${t.clientsNear} | ${t.gateway} | ${t.p50Ms} | ${t.p99Ms} | ${Object.entries(t.servedBy).map(([c, n]) => `${c}: ${n}`).join(", ")} | ${t.errors} |`);
  const f = r.failover;
  const section = `${START}
## Clusters (issue 31)

\`npm run bench -- --only clusters\` (also part of \`npm run bench\`) on ${r.date.slice(0, 10)}, ${r.machine.cores} shared, noisy cores (${r.machine.busyCoresBefore} busy with other work when the phase started). Two sim clusters, a and b, each one NIXL prefill/decode pair over the OpenAI API with the sim's default latency model. The gateway runs at the edge next to the client, so a client near a is modelled by a network delay of ${r.delays.nearMs} ms on every request to a's engines and ${r.delays.farMs} ms to b's (and the other way round near b); the KV pull inside a cluster is not delayed, and a pull across clusters is refused (no transfer path: decode recomputes the prompt). Two gateways from the benchmark's frozen bundle under \`wrangler dev\`: **geo** (engines in their clusters, the client's place in \`x-client-geo\`) and **flat** (the same engines as one prefill and one decode pool, round-robin: the gateway before clusters). ${r.requests} streamed completions per row (~260-token prompts, ${MAX_TOKENS} tokens), one at a time, geo and flat interleaved request by request. TTFT is the first token event at the client. Raw figures: [bench/results/clusters.json](../bench/results/clusters.json).

| clients near | gateway | TTFT p50 ms | TTFT p99 ms | served by (x-gateway-cluster) | errors |
|---|---|---|---|---|---|
${rows.join("\n")}

Pulls refused because prefill and decode were in different clusters: geo ${r.crossClusterPulls.geo}, flat ${r.crossClusterPulls.flat} (each one a prompt computed twice and a handoff left pinned until its lease).

A cluster lost under load: clients near b, 4 at a time on the geo gateway for 7 s; every engine of b killed 2 s in (listeners closed, running requests cut). ${f.requests} requests: ${f.failed} failed (${f.failedAfterKill} of them started after the kill). First response served by a: ${f.firstOnAMs ?? "none"} ms after the kill; last failure: ${f.lastFailureMs} ms after it; requests started after the kill were served by ${Object.entries(f.servedAfterKill).map(([c, n]) => `${c}: ${n}`).join(", ")}. TTFT p50 by when the request started (same 4-way load throughout):

| before the kill (on b, ${r.delays.nearMs} ms away) | 0-1 s after | 1-2 s after | from 2 s after (on a, ${r.delays.farMs} ms away) |
|---|---|---|---|
| ${f.ttftP50Ms.beforeKill ?? "-"} | ${f.ttftP50Ms.first ?? "-"} | ${f.ttftP50Ms.second ?? "-"} | ${f.ttftP50Ms.later ?? "-"} |

Until b's breakers open (\`breaker.failure_threshold\` failed attempts per engine) a request's first attempt still tries b, fails at connect and is retried on a after the retry backoff: that is the cost of the first second.
${END}`;
  const doc = await readFile("docs/benchmarks.md", "utf8");
  const i = doc.indexOf(START);
  const j = doc.indexOf(END);
  await writeFile("docs/benchmarks.md", i >= 0 && j > i ? doc.slice(0, i) + section + doc.slice(j + END.length) : `${doc.trimEnd()}\n\n${section}\n`);
}
