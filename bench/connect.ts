// VllmEngine Generate from Node with @connectrpc/connect-node's Connect transport, timing
// every response message, and the response headers (x-pd-prefill).
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { GenerateRequestSchema, VllmEngine } from "../src/gen/vllm_engine_pb.js";

export interface ConnectStreamResult {
  /** Milliseconds from the call to the response headers, each chunk message, the end. */
  headersMs: number;
  chunks: number[];
  totalMs: number;
  completes: number;
  headers: Headers;
}

export interface GenerateOptions {
  text: string;
  maxTokens: number;
  n?: number;
  stream?: boolean;
  headers?: Record<string, string>;
  /** connect+json instead of connect+proto: the gateway's decoded path (api/engine/raw-eligible.ts). */
  json?: boolean;
}

const clients = new Map<string, Client<typeof VllmEngine>>();

/** connect+proto by default (what gRPC clients send), connect+json when asked. Compressed
 *  responses are not asked for (connect-node asks for gzip and br by default): the engines'
 *  frames are small, and a client that accepts gzip keeps the gateway's decoded path, which
 *  compresses messages of 1 KiB and more (docs/api.md). */
export function engineClient(baseUrl: string, json = false): Client<typeof VllmEngine> {
  const key = `${json ? "json" : "proto"} ${baseUrl}`;
  let c = clients.get(key);
  if (!c) {
    c = createClient(VllmEngine, createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: !json, acceptCompression: [] }));
    clients.set(key, c);
  }
  return c;
}

export async function generate(baseUrl: string, o: GenerateOptions): Promise<ConnectStreamResult> {
  const req = create(GenerateRequestSchema, {
    input: { case: "text", value: o.text },
    samplingParams: { maxTokens: o.maxTokens, ignoreEos: true, n: o.n ?? 1 },
    stream: o.stream ?? true,
  });
  const t0 = performance.now();
  let headersMs = -1;
  let headers = new Headers();
  const chunks: number[] = [];
  let completes = 0;
  for await (const res of engineClient(baseUrl, o.json).generate(req, {
    headers: o.headers ?? {},
    // A client-side limit, not a deadline header: a deadline keeps the gateway on its decoded path.
    signal: AbortSignal.timeout(60_000),
    onHeader: (h) => {
      headersMs = performance.now() - t0;
      headers = h;
    },
  })) {
    const now = performance.now() - t0;
    if (res.response.case === "chunk") chunks.push(now);
    else if (res.response.case === "complete") {
      completes++;
      // A non-streamed Generate answers with completes only: count the first as the first token.
      if (chunks.length === 0 && !(o.stream ?? true)) chunks.push(now);
    }
  }
  const totalMs = performance.now() - t0;
  return { headersMs: headersMs < 0 ? totalMs : headersMs, chunks, totalMs, completes, headers };
}
