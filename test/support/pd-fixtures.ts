// Shared fixtures for the gRPC PD integration tests: a prefill/decode sim pair, the gateway
// config that points at it, and a Generate call that collects frames and headers.
import { ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GenerateRequestSchema, GenerateResponse } from "../../src/gen/vllm_engine_pb.js";
import type { EngineSpec } from "../../sim/types.js";
import type { TestCluster } from "./sim.js";
import type { TestGateway } from "./gateway.js";

export const FAST = { perPromptTokenMs: 0.01, perOutputTokenMs: 0.5, perBlockPullMs: 0.01 };
export const MODEL = "m";

export function pairSpecs(prefill: Partial<EngineSpec> = {}, decode: Partial<EngineSpec> = {}): EngineSpec[] {
  return [
    { name: "prefill", role: "prefill", kvConnector: "NixlConnector", kvEngineId: "prefill-eng", model: MODEL, port: 0, latency: FAST, ...prefill },
    { name: "decode", role: "decode", kvConnector: "NixlConnector", kvEngineId: "decode-eng", model: MODEL, port: 0, latency: FAST, ...decode },
  ];
}

export interface PairConfigOptions {
  /** The model's generate_relay (default: the config's default, "native"). */
  generateRelay?: "frames" | "native";
  prefill?: Record<string, unknown>;
  decode?: Record<string, unknown>;
  transport?: "connect" | "grpc-web";
  encode?: boolean;
  deferredAbortMaxMs?: number;
  allowOverrides?: boolean;
  /** debug.log_paths (default here: on). */
  logPaths?: boolean;
}

export function pairConfig(cluster: TestCluster, o: PairConfigOptions = {}) {
  const transport = o.transport ?? "connect";
  return {
    models: {
      [MODEL]: {
        prefill: [{ name: "prefill", url: cluster.url("prefill"), transport, ...o.prefill }],
        decode: [{ name: "decode", url: cluster.url("decode"), transport, ...o.decode }],
        ...(o.encode ? { encode: [{ name: "encode", url: cluster.url("decode"), transport }] } : {}),
        ...(o.generateRelay ? { generate_relay: o.generateRelay } : {}),
      },
    },
    pd: { deferred_abort_max_ms: o.deferredAbortMaxMs ?? 25_000, engine_info_ttl_ms: 0 },
    // The path lines are on here: the relay tests read which path a request took from them.
    debug: { allow_pd_overrides: o.allowOverrides ?? false, log_paths: o.logPaths ?? true },
  };
}

export interface GenerateOutcome {
  frames: GenerateResponse[];
  header: Headers;
  error?: ConnectError;
  /** Token ids per output index, from chunks (stream) or completes (non-stream). */
  tokens: Map<number, number[]>;
  completes: Map<number, GenerateResponse["response"] & { case: "complete" }>;
}

export async function generate(
  gw: TestGateway,
  req: MessageInitShape<typeof GenerateRequestSchema>,
  opts: { signal?: AbortSignal; headers?: Record<string, string>; protocol?: "connect" | "grpc-web" } = {},
): Promise<GenerateOutcome> {
  const header = new Headers();
  const frames: GenerateResponse[] = [];
  const out: GenerateOutcome = { frames, header, tokens: new Map(), completes: new Map() };
  try {
    const stream = gw.engineClient(opts.protocol).generate(req, {
      headers: { "x-model": MODEL, ...opts.headers },
      signal: opts.signal,
      onHeader: (h) => h.forEach((v, k) => header.set(k, v)),
    });
    for await (const f of stream) {
      frames.push(f);
      if (f.response.case === "chunk") {
        const c = f.response.value;
        out.tokens.set(c.index, [...(out.tokens.get(c.index) ?? []), ...c.tokenIds]);
      } else if (f.response.case === "complete") {
        out.completes.set(f.response.value.index, f.response as never);
        if (!req.stream) out.tokens.set(f.response.value.index, [...f.response.value.outputIds]);
      }
    }
  } catch (err) {
    out.error = ConnectError.from(err);
  }
  return out;
}

/** The recorded Generate requests an engine received, in proto JSON (proto field names). */
export async function generatesReceived(cluster: TestCluster, engine: string): Promise<Record<string, unknown>[]> {
  const stats = await cluster.stats(engine);
  return stats.recent.filter((r) => r.method === "Generate").map((r) => r.body as Record<string, unknown>);
}

export async function expectNoPinnedBlocks(cluster: TestCluster): Promise<void> {
  for (const e of cluster.engines) {
    const s = await cluster.stats(e.spec.name);
    if (s.blocksPinned !== 0) throw new Error(`${e.spec.name} still pins ${s.blocksPinned} blocks`);
  }
}
