// `npm run bench:load`: holds N concurrent streams (default 500) through the gateway in
// workerd (started by `wrangler dev`, addressed at the Worker's own socket unless `--via dev`)
// for a while (default 60 s) against the simulated PD cluster in its own process, replacing each
// finished stream at once, then checks that nothing leaked: no errors, no pinned KV blocks,
// no engine request still running, and the gateway's in-flight counters back to zero.
// Bounded in count and time; only 127.0.0.1 is contacted. Writes bench/results/load.json and
// the "Load test" section of docs/benchmarks.md.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fetch as clientFetch } from "undici";
import { startWranglerDev, type WranglerDev } from "../scripts/wrangler-dev.js";
import type { EngineStats } from "../sim/types.js";
import { installSignalHandlers, onCleanup, runCleanups } from "./cleanup.js";
import { rssMb as procRssMb } from "./proc.js";
import { heapAfterGcMb } from "./profile.js";
import { entryPort, startSim, type SimProcess } from "./targets.js";

const args = new Map(process.argv.slice(2).flatMap((a, i, all) => (a.startsWith("--") ? [[a.slice(2), all[i + 1] ?? ""]] : [])));
const STREAMS = Number(args.get("streams") ?? 500);
const SECONDS = Number(args.get("seconds") ?? 60);
/** `entry` (default): the Worker's own workerd socket. `dev`: wrangler dev's public port,
 *  through its dev-only proxy workerd (see docs/benchmarks.md for why that is not the default). */
const VIA = args.get("via") ?? "entry";
/** The engines' idle keep-alive (s). Default: what docs/operations.md recommends for vLLM
 *  behind the gateway (VLLM_HTTP_TIMEOUT_KEEP_ALIVE above the 900 s pool idle time);
 *  `--engine-keep-alive 5` is vLLM's own default, to see the close race it causes. */
const ENGINE_KEEP_ALIVE_S = Number(args.get("engine-keep-alive") ?? 905);
/** The load generator closes its idle connections after this (ms): below workerd's inbound
 *  idle timeout, the same rule as for the engines, so the client never writes a request on a
 *  connection the gateway is closing. */
const CLIENT_KEEP_ALIVE_MS = 1_000;
const SAMPLE_MS = 5_000;
const ENGINES = ["prefill", "decode"] as const;

interface Sample {
  t: number;
  open: number;
  completed: number;
  errors: number;
  blocksPinned: number;
  engineActive: number;
  gatewayInFlight?: number;
  workerdRssMb?: number;
}

async function stats(sim: SimProcess): Promise<EngineStats[]> {
  return Promise.all(ENGINES.map(async (e) => (await (await fetch(`${sim.url(e)}/sim/stats`)).json()) as EngineStats));
}

async function gatewayInFlight(base: string): Promise<number | undefined> {
  try {
    const res = await fetch(`${base}/admin/metrics/recent?limit=0`, { signal: AbortSignal.timeout(4_000) });
    const body = (await res.json()) as { inFlightRequests?: number; engineLoad?: number };
    return (body.inFlightRequests ?? 0) + (body.engineLoad ?? 0);
  } catch {
    return undefined;
  }
}

function rssMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    return Math.round(procRssMb(pid) * 10) / 10;
  } catch {
    return undefined;
  }
}

async function main() {
  if (!Number.isInteger(STREAMS) || STREAMS < 1 || !(SECONDS > 0) || !["entry", "dev"].includes(VIA) || !(ENGINE_KEEP_ALIVE_S >= 1)) {
    throw new Error("usage: npm run bench:load -- [--streams N] [--seconds S] [--via entry|dev] [--engine-keep-alive SECONDS]");
  }
  installSignalHandlers();
  const keepAliveTimeoutMs = ENGINE_KEEP_ALIVE_S * 1000;
  const client = new Agent({ keepAliveTimeout: CLIENT_KEEP_ALIVE_MS, keepAliveMaxTimeout: CLIENT_KEEP_ALIVE_MS, connections: STREAMS });
  onCleanup("load client", () => client.close());
  const latency = { perPromptTokenMs: 0.05, perOutputTokenMs: 20, perBlockPullMs: 0.01 };
  console.log(`load: ${STREAMS} concurrent streams for ${SECONDS} s through the gateway in workerd (wrangler dev, via ${VIA}; PD over the OpenAI API, NIXL)`);
  const tmp = await mkdtemp(join(tmpdir(), "vllm-edge-load-"));
  onCleanup("tmp", () => rm(tmp, { recursive: true, force: true }));
  // The sim runs in its own process so the load generator never starves it (or it them).
  const sim = await startSim({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", model: "m", port: 0, latency, keepAliveTimeoutMs },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", model: "m", port: 0, latency, keepAliveTimeoutMs },
    ],
  }, tmp);
  const gw: WranglerDev = await startWranglerDev({
    auth: { data_plane: "open" },
    limits: { max_n: 16 },
    models: {
      m: {
        prefill: [{ name: "prefill", url: sim.url("prefill"), transport: "openai-http", kv_connector: "NixlConnector" }],
        decode: [{ name: "decode", url: sim.url("decode"), transport: "openai-http" }],
      },
    },
  });
  onCleanup("wrangler dev", () => gw.stop());
  const workerPid = gw.workerd().worker;
  const base = VIA === "dev" || workerPid === undefined ? gw.url : `http://127.0.0.1:${await entryPort(workerPid, "/health")}`;
  const heapBefore = await heapAfterGcMb(gw.inspectorPort);
  console.log(`load: gateway at ${base} (workerd pid ${workerPid ?? "?"}), sim pid ${sim.pid}`);
  let open = 0;
  let completed = 0;
  let errors = 0;
  /** Error kind (status and message, digits folded) -> how many and the first seen in full. */
  const errorKinds = new Map<string, { count: number; first: string }>();
  const noteError = (sample: string) => {
    const kind = sample.slice(0, 160).replace(/\d+/g, "#");
    const seen = errorKinds.get(kind);
    if (seen) seen.count++;
    else errorKinds.set(kind, { count: 1, first: sample.slice(0, 400) });
  };
  const deadline = Date.now() + SECONDS * 1000;
  const started = Date.now();
  let seq = 0;

  async function oneStream(): Promise<void> {
    const id = seq++;
    open++;
    try {
      const res = await clientFetch(`${base}/v1/completions`, {
        dispatcher: client,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", prompt: `load test stream ${id % 97} with a shared prefix`, max_tokens: 48, ignore_eos: true, stream: true, n: id % 10 === 0 ? 4 : 1 }),
      });
      const text = await res.text();
      if (res.status !== 200 || !text.includes("data: [DONE]") || text.includes('"error"')) {
        errors++;
        noteError(`${res.status} ${text.slice(0, 400)}`);
      } else completed++;
    } catch (err) {
      errors++;
      const cause = (err as { cause?: unknown }).cause;
      noteError(cause ? `${String(err)}: ${String(cause)}` : String(err));
    } finally {
      open--;
    }
  }

  async function streamLoop(): Promise<void> {
    while (Date.now() < deadline) await oneStream();
  }

  const samples: Sample[] = [];
  const sampler = setInterval(async () => {
    const s = await stats(sim);
    const sample: Sample = {
      t: Math.round((Date.now() - started) / 1000),
      open, completed, errors,
      blocksPinned: s.reduce((n, e) => n + e.blocksPinned, 0),
      engineActive: s.reduce((n, e) => n + e.activeRequests, 0),
      gatewayInFlight: await gatewayInFlight(base),
      workerdRssMb: rssMb(workerPid),
    };
    samples.push(sample);
    console.log(`load: t=${sample.t}s open=${open} completed=${completed} errors=${errors} pinned=${sample.blocksPinned} engineActive=${sample.engineActive} gatewayInFlight=${sample.gatewayInFlight ?? "?"} rss=${sample.workerdRssMb ?? "?"}MB`);
  }, SAMPLE_MS);

  try {
    await Promise.all(Array.from({ length: STREAMS }, streamLoop));
  } finally {
    clearInterval(sampler);
  }
  await new Promise((r) => setTimeout(r, 3_000)); // let leases, aborts and counters settle
  const heapAfter = await heapAfterGcMb(gw.inspectorPort);
  const end = await stats(sim);
  const after = {
    blocksPinned: end.reduce((n, e) => n + e.blocksPinned, 0),
    engineActive: end.reduce((n, e) => n + e.activeRequests, 0),
    gatewayInFlight: await gatewayInFlight(base),
    leasesExpired: end.reduce((n, e) => n + e.leasesExpired, 0),
    prefillGenerate: end.find((e) => e.engine === "prefill")?.generateRequests ?? 0,
  };
  const elapsed = (Date.now() - started) / 1000;
  const result = {
    date: new Date().toISOString(),
    command: `npm run bench:load -- --streams ${STREAMS} --seconds ${SECONDS}${VIA === "entry" ? "" : ` --via ${VIA}`}${args.has("engine-keep-alive") ? ` --engine-keep-alive ${ENGINE_KEEP_ALIVE_S}` : ""}`,
    via: VIA,
    engineKeepAliveS: ENGINE_KEEP_ALIVE_S,
    clientKeepAliveMs: CLIENT_KEEP_ALIVE_MS,
    streams: STREAMS,
    seconds: SECONDS,
    completed,
    errors,
    errorKinds: [...errorKinds.values()].sort((a, b) => b.count - a.count).slice(0, 10),
    streamsPerSecond: Math.round((completed / elapsed) * 10) / 10,
    peakOpen: Math.max(0, ...samples.map((s) => s.open)),
    maxPinnedDuringRun: Math.max(0, ...samples.map((s) => s.blocksPinned)),
    heapAfterGcMb: { before: heapBefore, after: heapAfter },
    peakRssMb: Math.max(0, ...samples.map((s) => s.workerdRssMb ?? 0)),
    after,
    samples,
    wranglerLogHead: [] as string[],
    wranglerLogTail: [] as string[],
  };
  // The first warnings say what went wrong first; the last ones what it led to.
  const logLines = gw.log().split("\n").filter((l) => l.trim() !== "" && !/^\[wrangler:info\] (GET|POST) /.test(l));
  const wranglerLogHead = logLines.filter((l) => /warn|error|fail/i.test(l) && !/Request\.cf|ENOTFOUND|Scheduled Workers/.test(l)).slice(0, 30);
  const wranglerLogTail = logLines.slice(-30);
  await runCleanups();
  await mkdir("bench/results", { recursive: true });
  result.wranglerLogHead = wranglerLogHead;
  result.wranglerLogTail = wranglerLogTail;
  await writeFile("bench/results/load.json", JSON.stringify(result, null, 2) + "\n");
  await writeLoadSection(result);
  const leaked = errors > 0 || after.blocksPinned > 0 || after.engineActive > 0 || (after.gatewayInFlight ?? 0) > 0;
  console.log(`load: done: ${completed} streams, ${errors} errors, ${result.streamsPerSecond} streams/s, after: pinned=${after.blocksPinned} engineActive=${after.engineActive} gatewayInFlight=${after.gatewayInFlight}`);
  process.exit(leaked ? 1 : 0);
}

const START = "<!-- load-test:start -->";
const END = "<!-- load-test:end -->";

async function writeLoadSection(r: { command: string; date: string; via: string; engineKeepAliveS: number; clientKeepAliveMs: number; streams: number; seconds: number; completed: number; errors: number; streamsPerSecond: number; peakOpen: number; maxPinnedDuringRun: number; peakRssMb: number; heapAfterGcMb: { before?: number; after?: number }; after: Record<string, number | undefined> }) {
  const section = `${START}
## Load test (issue 7)

\`${r.command}\` on ${r.date.slice(0, 10)} (${os.cpus().length} cores, Node ${process.versions.node}): ${r.streams} concurrent SSE
streams (PD over the OpenAI API, NIXL handoff, 48 tokens at 20 ms each, every tenth request
n=4) held through the gateway in workerd (\`wrangler dev\`, ${r.via === "entry" ? "addressed at the Worker's own socket" : "through wrangler dev's public port"})
for ${r.seconds} s, each finished stream replaced at once; the simulated engines in their own
process with a ${r.engineKeepAliveS} s keep-alive, the client closing idle connections after
${r.clientKeepAliveMs} ms (see "Reading the load test" below).

| figure | value |
|---|---|
| streams completed | ${r.completed} |
| errors | ${r.errors} |
| streams/s | ${r.streamsPerSecond} |
| peak concurrently open | ${r.peakOpen} |
| most KV blocks pinned at a sample (handoffs awaiting their pull) | ${r.maxPinnedDuringRun} |
| workerd resident memory, peak (the process: isolates, allocator, inspector) | ${r.peakRssMb} MB |
| the Worker isolate's JS heap, before / after the run (read after asking V8 for a full GC; an upper bound if it did not run) | ${r.heapAfterGcMb.before ?? "n/a"} / ${r.heapAfterGcMb.after ?? "n/a"} MB |
| after the run: blocks pinned / engine requests running / gateway in-flight | ${r.after.blocksPinned} / ${r.after.engineActive} / ${r.after.gatewayInFlight ?? "n/a"} |
| leases expired | ${r.after.leasesExpired} |
${END}`;
  let doc = "";
  try {
    doc = await readFile("docs/benchmarks.md", "utf8");
  } catch {
    doc = "# Benchmarks\n";
  }
  const i = doc.indexOf(START);
  const j = doc.indexOf(END);
  doc = i >= 0 && j > i ? doc.slice(0, i) + section + doc.slice(j + END.length) : `${doc.trimEnd()}\n\n${section}\n`;
  await writeFile("docs/benchmarks.md", doc);
}

main().catch(async (err) => {
  console.error(`load: ${(err as Error).stack ?? err}`);
  await runCleanups();
  process.exit(1);
});
