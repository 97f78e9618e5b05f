// Shared helpers for the sim's unit tests: real Connect / gRPC-web / gRPC clients against a
// running cluster, stats polling, and SSE parsing.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import {
  GenerateRequestSchema,
  VllmEngine,
  type GenerateComplete,
  type GenerateResponse,
  type GenerateStreamChunk,
} from "../../../src/gen/vllm_engine_pb.js";
import { startCluster } from "../../../sim/cluster.js";
import type { ClusterSpec, EngineSpec, EngineStats, RunningCluster, RunningEngine, SimLatency } from "../../../sim/types.js";

export type EngineClient = Client<typeof VllmEngine>;

/** Latencies small enough for a fast suite but with real timers between steps. */
export const FAST: Partial<SimLatency> = { perPromptTokenMs: 0, perOutputTokenMs: 0.2, perBlockPullMs: 0, pullSetupMs: 0 };

const sessions: Http2SessionManager[] = [];

export function connectClient(e: RunningEngine): EngineClient {
  return createClient(VllmEngine, createConnectTransport({ baseUrl: e.url, httpVersion: "1.1" }));
}

export function grpcWebClient(e: RunningEngine): EngineClient {
  return createClient(VllmEngine, createGrpcWebTransport({ baseUrl: e.url, httpVersion: "1.1" }));
}

export function grpcClient(e: RunningEngine): EngineClient {
  if (!e.grpcUrl) throw new Error(`${e.spec.name} has no grpcUrl`);
  const sessionManager = new Http2SessionManager(e.grpcUrl);
  sessions.push(sessionManager);
  return createClient(VllmEngine, createGrpcTransport({ baseUrl: e.grpcUrl, sessionManager }));
}

/** Closes HTTP/2 sessions opened by grpcClient (so no handle outlives a test file). */
export function closeSessions(): void {
  for (const s of sessions.splice(0)) s.abort();
}

export async function cluster(engines: EngineSpec[], extra: Partial<ClusterSpec> = {}): Promise<RunningCluster> {
  return startCluster({ engines, ...extra });
}

export type GenInit = MessageInitShape<typeof GenerateRequestSchema>;

export function genReq(init: GenInit) {
  return create(GenerateRequestSchema, init);
}

export interface Frames {
  frames: GenerateResponse[];
  chunks: GenerateStreamChunk[];
  completes: GenerateComplete[];
}

export async function collect(stream: AsyncIterable<GenerateResponse>): Promise<Frames> {
  const out: Frames = { frames: [], chunks: [], completes: [] };
  for await (const f of stream) {
    out.frames.push(f);
    if (f.response.case === "chunk") out.chunks.push(f.response.value);
    else if (f.response.case === "complete") out.completes.push(f.response.value);
  }
  return out;
}

export async function generate(client: EngineClient, init: GenInit, headers?: Record<string, string>): Promise<Frames> {
  return collect(client.generate(genReq(init), headers ? { headers } : {}));
}

export async function stats(e: RunningEngine): Promise<EngineStats> {
  const res = await fetch(`${e.url}/sim/stats`);
  return (await res.json()) as EngineStats;
}

export async function resetAll(c: RunningCluster): Promise<void> {
  await Promise.all(c.engines.map((e) => fetch(`${e.url}/sim/reset?hard=1`, { method: "POST" }).then((r) => r.arrayBuffer())));
}

/** Polls `fn` until it returns true (or throws after `timeoutMs`). */
export async function waitFor(fn: () => Promise<boolean> | boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

/** Parses an SSE body into its `data:` payloads (JSON-decoded, "[DONE]" kept as a string). */
export function parseSse(text: string): unknown[] {
  return text
    .split("\n\n")
    .map((block) => block.trim())
    .filter((block) => block.startsWith("data: "))
    .map((block) => {
      const data = block.slice("data: ".length);
      return data === "[DONE]" ? data : (JSON.parse(data) as unknown);
    });
}

/** Parses an SSE body whose events carry an `event:` line into {event, data} (JSON-decoded). */
export function parseNamedSse(text: string): { event: string; data: any }[] { // eslint-disable-line @typescript-eslint/no-explicit-any
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const [ev, data, ...rest] = block.split("\n");
      if (!ev?.startsWith("event: ") || !data?.startsWith("data: ") || rest.length > 0) throw new Error(`not an event: line then a data: line: ${block}`);
      return { event: ev.slice("event: ".length), data: JSON.parse(data.slice("data: ".length)) as unknown };
    });
}

export const nixlPrefillParams = '{"do_remote_decode":true,"do_remote_prefill":false}';

/** The gateway's sanitised prefill request (max_tokens=1, ignore_eos), with NIXL params. */
export function prefillInit(requestId: string, text: string, kvJson = nixlPrefillParams): GenInit {
  return {
    requestId,
    input: { case: "text", value: text },
    samplingParams: { maxTokens: 1, ignoreEos: true, n: 1 },
    stream: false,
    kvTransferParamsJson: kvJson,
  };
}

/** The token ids streamed for one index: its chunks' deltas, in order (a streamed complete
 *  only repeats the last delta). */
export function streamedTokens(f: Frames, index = 0): number[] {
  return f.chunks.filter((ch) => ch.index === index).flatMap((ch) => ch.tokenIds);
}
