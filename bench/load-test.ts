// `npm run bench:load`: holds N concurrent streams (default 500) through the gateway under
// `wrangler dev` for a while (default 60 s) against the simulated PD cluster, replacing each
// finished stream at once, then checks that nothing leaked: no errors, no pinned KV blocks,
// no engine request still running, and the gateway's in-flight counters back to zero.
// Bounded in count and time; only 127.0.0.1 is contacted. Writes bench/results/load.json and
// the "Load test" section of docs/benchmarks.md.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { startCluster } from "../sim/cluster.js";
import type { EngineStats, RunningCluster } from "../sim/types.js";
import { startWranglerDev, type WranglerDev } from "../scripts/wrangler-dev.js";

const args = new Map(process.argv.slice(2).flatMap((a, i, all) => (a.startsWith("--") ? [[a.slice(2), all[i + 1] ?? ""]] : [])));
const STREAMS = Number(args.get("streams") ?? 500);
const SECONDS = Number(args.get("seconds") ?? 60);
const SAMPLE_MS = 5_000;

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

async function stats(cluster: RunningCluster): Promise<EngineStats[]> {
  return Promise.all(cluster.engines.map(async (e) => (await (await fetch(`${e.url}/sim/stats`)).json()) as EngineStats));
}

async function gatewayInFlight(gw: WranglerDev): Promise<number | undefined> {
  try {
    const body = (await (await fetch(`${gw.url}/admin/metrics/recent?limit=0`)).json()) as { inFlightRequests?: number; engineLoad?: number };
    return (body.inFlightRequests ?? 0) + (body.engineLoad ?? 0);
  } catch {
    return undefined;
  }
}

async function rssMb(pid: number | undefined): Promise<number | undefined> {
  if (!pid) return undefined;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : undefined;
  } catch {
    return undefined;
  }
}

async function main() {
  const latency = { perPromptTokenMs: 0.05, perOutputTokenMs: 20, perBlockPullMs: 0.01 };
  console.log(`load: ${STREAMS} concurrent streams for ${SECONDS} s through wrangler dev (PD over the OpenAI API, NIXL)`);
  const cluster = await startCluster({
    engines: [
      { name: "prefill", role: "prefill", kvConnector: "NixlConnector", model: "m", port: 0, latency },
      { name: "decode", role: "decode", kvConnector: "NixlConnector", model: "m", port: 0, latency },
    ],
  });
  const gw = await startWranglerDev({
    auth: { data_plane: "open" },
    limits: { max_n: 16 },
    models: {
      m: {
        prefill: [{ name: "prefill", url: cluster.engine("prefill").url, transport: "openai-http", kv_connector: "NixlConnector" }],
        decode: [{ name: "decode", url: cluster.engine("decode").url, transport: "openai-http" }],
      },
    },
  });
  const stop = async () => {
    await gw.stop();
    await cluster.close();
  };
  process.once("SIGINT", () => void stop().then(() => process.exit(130)));
  let open = 0;
  let completed = 0;
  let errors = 0;
  const errorSamples: string[] = [];
  const deadline = Date.now() + SECONDS * 1000;
  const started = Date.now();
  let seq = 0;

  async function oneStream(): Promise<void> {
    const id = seq++;
    open++;
    try {
      const res = await fetch(`${gw.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", prompt: `load test stream ${id % 97} with a shared prefix`, max_tokens: 48, ignore_eos: true, stream: true, n: id % 10 === 0 ? 4 : 1 }),
      });
      const text = await res.text();
      if (res.status !== 200 || !text.includes("data: [DONE]") || text.includes('"error"')) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${res.status} ${text.slice(0, 200)}`);
      } else completed++;
    } catch (err) {
      errors++;
      if (errorSamples.length < 5) errorSamples.push(String(err));
    } finally {
      open--;
    }
  }

  async function worker(): Promise<void> {
    while (Date.now() < deadline) await oneStream();
  }

  const samples: Sample[] = [];
  const sampler = setInterval(async () => {
    const s = await stats(cluster);
    const sample: Sample = {
      t: Math.round((Date.now() - started) / 1000),
      open, completed, errors,
      blocksPinned: s.reduce((n, e) => n + e.blocksPinned, 0),
      engineActive: s.reduce((n, e) => n + e.activeRequests, 0),
      gatewayInFlight: await gatewayInFlight(gw),
      workerdRssMb: await rssMb(gw.workerd().worker),
    };
    samples.push(sample);
    console.log(`load: t=${sample.t}s open=${open} completed=${completed} errors=${errors} pinned=${sample.blocksPinned} engineActive=${sample.engineActive} gatewayInFlight=${sample.gatewayInFlight ?? "?"} rss=${sample.workerdRssMb ?? "?"}MB`);
  }, SAMPLE_MS);

  try {
    await Promise.all(Array.from({ length: STREAMS }, worker));
  } finally {
    clearInterval(sampler);
  }
  await new Promise((r) => setTimeout(r, 3_000)); // let leases, aborts and counters settle
  const end = await stats(cluster);
  const after = {
    blocksPinned: end.reduce((n, e) => n + e.blocksPinned, 0),
    engineActive: end.reduce((n, e) => n + e.activeRequests, 0),
    gatewayInFlight: await gatewayInFlight(gw),
    leasesExpired: end.reduce((n, e) => n + e.leasesExpired, 0),
    prefillGenerate: end.find((e) => e.engine === "prefill")?.generateRequests ?? 0,
  };
  const elapsed = (Date.now() - started) / 1000;
  const result = {
    date: new Date().toISOString(),
    command: `npm run bench:load -- --streams ${STREAMS} --seconds ${SECONDS}`,
    streams: STREAMS,
    seconds: SECONDS,
    completed,
    errors,
    errorSamples,
    streamsPerSecond: Math.round((completed / elapsed) * 10) / 10,
    peakOpen: Math.max(0, ...samples.map((s) => s.open)),
    maxPinnedDuringRun: Math.max(0, ...samples.map((s) => s.blocksPinned)),
    peakRssMb: Math.max(0, ...samples.map((s) => s.workerdRssMb ?? 0)),
    after,
    samples,
    wranglerLogTail: [] as string[],
  };
  const wranglerLogTail = gw.log().split("\n").filter((l) => !/^\[wrangler:info\] (GET|POST) /.test(l)).slice(-30);
  await stop();
  await mkdir("bench/results", { recursive: true });
  result.wranglerLogTail = wranglerLogTail;
  await writeFile("bench/results/load.json", JSON.stringify(result, null, 2) + "\n");
  await writeLoadSection(result);
  const leaked = errors > 0 || after.blocksPinned > 0 || after.engineActive > 0 || (after.gatewayInFlight ?? 0) > 0;
  console.log(`load: done: ${completed} streams, ${errors} errors, ${result.streamsPerSecond} streams/s, after: pinned=${after.blocksPinned} engineActive=${after.engineActive} gatewayInFlight=${after.gatewayInFlight}`);
  process.exit(leaked ? 1 : 0);
}

const START = "<!-- load-test:start -->";
const END = "<!-- load-test:end -->";

async function writeLoadSection(r: { command: string; date: string; streams: number; seconds: number; completed: number; errors: number; streamsPerSecond: number; peakOpen: number; maxPinnedDuringRun: number; peakRssMb: number; after: Record<string, number | undefined> }) {
  const section = `${START}
## Load test (issue 7)

\`${r.command}\` on ${r.date.slice(0, 10)}: ${r.streams} concurrent SSE streams (PD over the OpenAI API,
NIXL handoff, 48 tokens at 20 ms each, every tenth request n=4) held through \`wrangler dev\` for
${r.seconds} s, each finished stream replaced at once.

| figure | value |
|---|---|
| streams completed | ${r.completed} |
| errors | ${r.errors} |
| streams/s | ${r.streamsPerSecond} |
| peak concurrently open | ${r.peakOpen} |
| most KV blocks pinned at a sample (handoffs awaiting their pull) | ${r.maxPinnedDuringRun} |
| workerd resident memory, peak | ${r.peakRssMb} MB |
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

main().catch((err) => {
  console.error(`load: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
