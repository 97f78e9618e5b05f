// `npm start`: the simulated vLLM cluster (sim/default-cluster.json) plus `wrangler dev`
// pointed at it. Waits until both answer, prints copy-paste examples, and shuts everything
// down on Ctrl-C. No account and no network needed.
import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { startCluster } from "../sim/cluster.js";
import type { ClusterSpec } from "../sim/types.js";

const PORT = Number(process.env.GATEWAY_PORT ?? 8787);
const GATEWAY = `http://127.0.0.1:${PORT}`;

async function waitFor(url: string, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not answer at ${url} within ${timeoutMs} ms (${last})`);
}

async function main() {
  const spec = JSON.parse(await readFile(new URL("../sim/default-cluster.json", import.meta.url), "utf8")) as ClusterSpec;
  console.log("start: simulated vLLM cluster ...");
  const cluster = await startCluster(spec);
  for (const e of cluster.engines) {
    console.log(`  engine ${e.spec.name.padEnd(16)} ${e.spec.role.padEnd(8)} ${e.spec.kvConnector.padEnd(17)} ${e.url}${e.grpcUrl ? `  (gRPC ${e.grpcUrl})` : ""}`);
  }
  console.log(`start: wrangler dev on ${GATEWAY} ...`);
  const wrangler: ChildProcess = spawn(
    process.execPath,
    ["node_modules/wrangler/bin/wrangler.js", "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--show-interactive-dev-session=false"],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log("\nstart: shutting down ...");
    wrangler.kill("SIGTERM");
    await cluster.close();
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));
  wrangler.on("exit", (code) => void stop(code ?? 1));

  await waitFor(`${GATEWAY}/health`, "the gateway");
  // A Connect streaming request body is one enveloped message: flags byte + 4-byte length.
  const demo = '{"request_id":"demo-1","text":"hello edge","stream":true}';
  const envelope = ["00", ...[24, 16, 8, 0].map((b) => ((demo.length >> b) & 0xff).toString(16).padStart(2, "0"))].map((h) => `\\x${h}`).join("");
  console.log(`
vllm-edge-gateway is up at ${GATEWAY} in front of the simulated cluster.

  # PD generate over Connect (JSON), streamed; n=1 runs the prefill leg:
  curl -sN ${GATEWAY}/vllm.grpc.engine.VllmEngine/Generate \\
    -H 'content-type: application/connect+json' -H 'x-model: sim-model' -D - \\
    --data-binary @<(printf '${envelope}${demo}')

  # A fan-out (n=4) request skips the prefill leg (see x-pd-prefill), with buf curl over gRPC-web:
  npx buf curl --protocol grpcweb --schema proto -H 'x-model: sim-model' \\
    -d '{"text":"hello edge","stream":true,"sampling_params":{"n":4,"max_tokens":8}}' \\
    ${GATEWAY}/vllm.grpc.engine.VllmEngine/Generate -v

  # OpenAI-compatible HTTP (model sim-model-http):
  curl -s ${GATEWAY}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"sim-model-http","messages":[{"role":"user","content":"hello edge"}],"n":3}'

  # OpenAI over VllmEngine engines (model Qwen/Qwen3-0.6B): the gateway tokenizes with the
  # engine's real Qwen3 tokenizer bundle; <sim-say>…</sim-say> scripts the sim's reply:
  curl -sN ${GATEWAY}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"Qwen/Qwen3-0.6B","messages":[{"role":"user","content":"<sim-say>Hello from the edge! 你好 😀</sim-say>"}],"max_tokens":12,"stream":true}'

  # What each engine did:
  curl -s ${cluster.engine("prefill-0").url}/sim/stats

Ctrl-C stops everything.
`);
}

main().catch((err) => {
  console.error(`start: ${(err as Error).message}`);
  process.exit(1);
});
