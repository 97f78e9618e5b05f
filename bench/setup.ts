// What the benchmarks run against: one simulated cluster with an engine (or PD pair) per
// scenario, the gateway config that names them, and the request bodies.
import { gatewayConfigSchema } from "../src/config/schema.js";
import type { ClusterSpec, EngineSpec } from "../sim/types.js";
import type { SimProcess } from "./targets.js";
import { zeroLatencyEngine } from "./targets.js";

/** Model names; each is also the served model name of its sim engines. */
export const M = {
  /** Aggregated, one `regular` engine with zero simulated latency (items 1-3, 5, 6); its SSE
   *  relay is "inspect", named, so its rows compare with earlier runs. */
  agg: "bench-agg",
  /** As agg, on an engine of its own, with the model's sse_relay "native" (issue 17). */
  aggNative: "bench-agg-native",
  /** PD pair with zero simulated latency (CPU of a two-leg request). */
  pd0: "bench-pd0",
  /** PD pair with the sim's default latency model (item 4). */
  pd: "bench-pd",
  /** Aggregated engine with the default latency model (n=1 PD vs aggregated; paced streams). */
  aggLat: "bench-agg-lat",
  /** Aggregated engine with slow tokens: streams that stay open (memory). */
  long: "bench-long",
  /** PD pair (zero latency) serving the real Qwen3 tokenizer over Connect only: the OpenAI
   *  surface tokenizes for it (phase "tokenizer"). */
  qwen3: "bench-qwen3",
  /** Qwen3 on one aggregated VllmEngine engine (zero latency), tool parser hermes and
   *  reasoning parser qwen3 named (phase "parsers", issue 28). */
  qwen3Tools: "bench-qwen3-tools",
  /** One openai-http engine (zero latency) that samples EOS at REPLY_TOKENS on every API:
   *  chat, Responses and Messages replies of one length (phase "apis", issue 29). */
  apisHttp: "bench-apis",
  /** As apisHttp, a Qwen3 model on a VllmEngine engine (Responses through chat). */
  apisQwen3: "bench-apis-qwen3",
} as const;

/** The reply length of the "apis" phase's engines. */
export const REPLY_TOKENS = 256;

export const LONG_TOKEN_MS = 250;

export function clusterSpec(): ClusterSpec {
  const nixl = (name: string, role: "prefill" | "decode", model: string, extra: Partial<EngineSpec> = {}): EngineSpec => ({
    name, role, kvConnector: "NixlConnector", kvEngineId: name, model, ...extra,
  });
  const zero = { perPromptTokenMs: 0, perOutputTokenMs: 0, perBlockPullMs: 0, pullSetupMs: 0 };
  return {
    recentRequests: 4,
    engines: [
      zeroLatencyEngine("agg0", M.agg),
      zeroLatencyEngine("aggn", M.aggNative),
      nixl("p0", "prefill", M.pd0, { latency: zero }),
      nixl("d0", "decode", M.pd0, { latency: zero }),
      nixl("plat", "prefill", M.pd),
      nixl("dlat", "decode", M.pd),
      { name: "agglat", role: "both", kvConnector: "none", model: M.aggLat },
      nixl("q0p", "prefill", M.qwen3, { latency: zero }),
      nixl("q0d", "decode", M.qwen3, { latency: zero }),
      zeroLatencyEngine("qt", M.qwen3Tools),
      zeroLatencyEngine("apis", M.apisHttp, { faults: [{ eosAfter: REPLY_TOKENS }] }),
      zeroLatencyEngine("qa", M.apisQwen3, { faults: [{ eosAfter: REPLY_TOKENS }] }),
      { name: "long", role: "both", kvConnector: "none", model: M.long, latency: { perPromptTokenMs: 0, perOutputTokenMs: LONG_TOKEN_MS, perBlockPullMs: 0, pullSetupMs: 0 } },
    ],
  };
}

/** Each engine twice: over the vLLM OpenAI API (the OpenAI surface) and over Connect (the
 *  VllmEngine surface); the gateway picks the entry by the surface's transports. */
function both(name: string, url: string, extra: Record<string, unknown> = {}) {
  return [
    { name: `${name}-http`, url, transport: "openai-http", ...extra },
    { name: `${name}-connect`, url, transport: "connect" },
  ];
}

export function gatewayConfig(sim: SimProcess): unknown {
  const nixl = { kv_connector: "NixlConnector" };
  const config: Record<string, unknown> = {
    debug: { allow_pd_overrides: true },
    models: {
      // The inspecting relay, named (the default is "native", measured on M.aggNative), so the
      // report's "256-token SSE stream" rows keep meaning the JS-per-chunk relay.
      [M.agg]: { regular: both("agg0", sim.url("agg0")), sse_relay: "inspect" },
      [M.aggNative]: { regular: both("aggn", sim.url("aggn")), sse_relay: "native" },
      [M.pd0]: { prefill: both("p0", sim.url("p0"), nixl), decode: both("d0", sim.url("d0")) },
      [M.pd]: { prefill: both("plat", sim.url("plat"), nixl), decode: both("dlat", sim.url("dlat")) },
      [M.aggLat]: { regular: both("agglat", sim.url("agglat")) },
      [M.long]: { regular: both("long", sim.url("long")) },
      [M.qwen3Tools]: { regular: [{ name: "qt-connect", url: sim.url("qt"), transport: "connect" }], tool_parser: "hermes", reasoning_parser: "qwen3" },
      [M.apisHttp]: { regular: [{ name: "apis-http", url: sim.url("apis"), transport: "openai-http" }] },
      [M.apisQwen3]: { regular: [{ name: "qa-connect", url: sim.url("qa"), transport: "connect" }] },
      [M.qwen3]: {
        prefill: [{ name: "q0p-connect", url: sim.url("q0p"), transport: "connect" }],
        decode: [{ name: "q0d-connect", url: sim.url("q0d"), transport: "connect" }],
      },
    },
  };
  // The data plane is open here (no API key), as in `npm start`, when the schema has the switch.
  if ("auth" in gatewayConfigSchema.shape) config.auth = { data_plane: "open" };
  const parsed = gatewayConfigSchema.safeParse(config);
  if (!parsed.success) throw new Error(`bench gateway config does not parse: ${parsed.error.message}`);
  return config;
}

/** A prompt of exactly `tokens` sim tokens (whitespace-separated words). */
export function prompt(tokens: number, salt = ""): string {
  const words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"];
  const out: string[] = [];
  for (let i = 0; i < tokens; i++) out.push(i === 0 && salt ? salt : words[i % words.length]!);
  return out.join(" ");
}

export interface CompletionOptions {
  model: string;
  promptTokens?: number;
  maxTokens?: number;
  n?: number;
  stream?: boolean;
  salt?: string;
}

/** A /v1/completions body. `ignore_eos` keeps every stream at exactly max_tokens. */
export function completionBody(o: CompletionOptions): string {
  return JSON.stringify({
    model: o.model,
    prompt: o.promptTokens !== undefined ? prompt(o.promptTokens, o.salt) : "hello edge",
    max_tokens: o.maxTokens ?? 16,
    ...(o.n !== undefined ? { n: o.n } : {}),
    ...(o.stream ? { stream: true } : {}),
    ignore_eos: true,
  });
}

/** The small non-streamed completion of items 1, 2 and 6. Few tokens: even at zero simulated
 *  latency the sim waits one Node timer (>= 1 ms) per step, which would swamp the figures. */
export const SMALL_MAX_TOKENS = 4;
export const SMALL_COMPLETION = { path: "/v1/completions", body: completionBody({ model: M.agg, maxTokens: SMALL_MAX_TOKENS }) };
