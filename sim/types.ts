// Public shapes of the simulated vLLM cluster: engine specs, the running handles, and the
// JSON served at GET /sim/stats. Tests, `npm start` and the benchmarks depend on these names.

export type EngineRole = "prefill" | "decode" | "both" | "encode";
export type SimConnector = "NixlConnector" | "MooncakeConnector" | "none";

/** Fault injection, per engine (POST /sim/faults) or per request (header `x-sim-fault`, JSON). */
export interface SimFault {
  /** Fail the Generate call / OpenAI request before any output, with this Connect code name
   *  (e.g. "unavailable", "invalid_argument", "internal") or, on the OpenAI API, HTTP status. */
  failStart?: { code: string; message?: string; httpStatus?: number };
  /** Emit this many output tokens, then fail the stream with this code. `sse` (OpenAI
   *  streaming only): how the SSE stream fails: vLLM's error event and [DONE] ("error-event",
   *  the default), the connection reset with no more bytes ("reset"), or a clean end with no
   *  [DONE] ("no-done"). */
  failMidStream?: { afterTokens: number; code: string; message?: string; sse?: "error-event" | "reset" | "no-done" };
  /** gRPC only: send this many response frames normally, then fail the stream with this
   *  code (a stream error after the first message, whatever the stream mode). */
  failAfterFrames?: { frames: number; code: string; message?: string };
  /** Generate over HTTP/1.1 (Connect, gRPC-web) answers with an unparsable protobuf message
   *  ("garbage"), a frame cut short ("truncated"), or one good message followed by a frame cut
   *  short ("cut-after-frame"), by nothing: no end-of-stream ("no-end"), or by the connection
   *  lost without the body's end ("reset-after-frame", an engine that died); applies whatever
   *  the leg. */
  malformedResponse?: "garbage" | "truncated" | "cut-after-frame" | "no-end" | "reset-after-frame";
  /** HTTP/1.1 listener: close the connection on a generation request without answering, as a
   *  keep-alive connection the engine closed just as the request was written. Applied before
   *  the body is read, so `leg` does not filter it. */
  dropConnection?: boolean;
  /** Never answer (until aborted / the client goes away). */
  hang?: boolean;
  /** OpenAI streaming: the first event carries about `bytes` bytes of logprobs (vLLM's large
   *  events), written in 64 KiB pieces; `unterminated` never ends it (no blank line) and the
   *  stream then stays open until the client goes away. */
  bigEvent?: { bytes: number; unterminated?: boolean };
  /** OpenAI streaming (completions, chat): the body's end (HTTP/1.1's last chunk) comes this
   *  many ms after `data: [DONE]`, as through a slow link or proxy: a client that closes on
   *  [DONE] then leaves before the body ended. */
  endLateMs?: number;
  /** Only apply to this many more requests (default: all). */
  count?: number;
  /** Only apply to requests whose leg matches: "prefill" = carries do_remote_decode, "decode" = other. */
  leg?: "prefill" | "decode";
  /** Report the engine as not alive: HealthCheck healthy=false, GET /health 503. Does not
   *  affect generation (a wedged-but-serving engine is exactly what health checks must catch). */
  unhealthy?: boolean;
  /** The model samples EOS as its Nth output token (N >= 1) instead of at the prompt's
   *  natural length (8..32): with `leg: "prefill"` and N = 1, a prefill leg whose one token is
   *  EOS, which NIXL does not hand off unless the request ignores EOS. */
  eosAfter?: number;
  /** The Abort RPC answers only after this many ms (a busy engine's scheduler), so tests can
   *  hold Abort calls in flight. */
  slowAbortMs?: number;
}

export interface SimLatency {
  /** Milliseconds per prompt token computed (prefill work). Default 0.05. */
  perPromptTokenMs: number;
  /** Milliseconds per output token. Default 2. */
  perOutputTokenMs: number;
  /** Milliseconds per KV block pulled over the side channel. Default 0.01. */
  perBlockPullMs: number;
  /** Fixed milliseconds per pull (connection / descriptor exchange). Default 2. */
  pullSetupMs?: number;
}

export interface EngineSpec {
  name: string;
  role: EngineRole;
  kvConnector: SimConnector;
  /** kv_transfer_config.engine_id reported by GetServerInfo ("" = none; Mooncake legacy). */
  kvEngineId?: string;
  /** data_parallel_size reported by GetServerInfo (default 1). */
  dataParallelSize?: number;
  /** Served model name (default "sim-model"). */
  model?: string;
  /** HTTP/1.1 port: Connect, gRPC-web, OpenAI API, /sim/*, NIXL side channel. 0 = pick a free one. */
  port?: number;
  /** h2c port for plain gRPC. 0 = pick a free one; omitted = no plain-gRPC listener. */
  grpcPort?: number;
  /** Mooncake bootstrap listener port (Mooncake engines only). 0 = pick a free one. */
  bootstrapPort?: number;
  /** Lease on a finished request's pinned handoff, ms: the engine's
   *  VLLM_NIXL_ABORT_REQUEST_TIMEOUT (480 s in older vLLM releases, 30 s in newer ones).
   *  Default 30000, the newer value. Applies to Mooncake handoffs too. */
  leaseMs?: number;
  /** Idle keep-alive timeout of the HTTP/1.1 listener, ms (default 5000, uvicorn's and so
   *  `vllm serve`'s): clients that pool connections meet the close race vLLM has. */
  keepAliveTimeoutMs?: number;
  /** Tokens per KV block (default 16). */
  blockSize?: number;
  latency?: Partial<SimLatency>;
  faults?: SimFault[];
  /** KV cache capacity in blocks, the denominator of GetLoads token_usage (default 8192). */
  kvCapacityBlocks?: number;
  /** Hand off KV on every length-capped request, even untagged ones (a producer whose
   *  connector defaults to remote decode): what a "passthrough" gateway mode relays. */
  kvHandoffByDefault?: boolean;
  /** The cluster (KV-transfer domain) the engine is in (default "default"). A decode engine
   *  pulling a handoff from a prefill engine of another cluster is refused and counted
   *  (crossClusterPulls): there is no transfer path between clusters. */
  cluster?: string;
  /** `vllm serve --tool-call-parser`: how the OpenAI server turns `<tool_call>` markup in the
   *  output into `tool_calls` (sim/vllm-parsers.ts). Only "hermes" is modelled. */
  toolCallParser?: "hermes";
  /** `--enable-auto-tool-choice`: without it (and a tool parser) vLLM refuses
   *  `tool_choice: "auto"`, which is the default whenever a request carries tools. */
  enableAutoToolChoice?: boolean;
  /** `--reasoning-parser`: `<think>…</think>` goes to the message's `reasoning`. Only "qwen3". */
  reasoningParser?: "qwen3";
}

/** One cluster of engines as the sim places it. */
export interface SimClusterSpec {
  /** Added before the engine sees each request from outside the cluster (the gateway's
   *  round trip to the cluster), ms; the KV side channel inside the cluster is not delayed.
   *  Default 0; changeable at run time (POST /clusters/:id/delay on the control server). */
  networkDelayMs?: number;
}

export interface ClusterSpec {
  engines: EngineSpec[];
  /** Clusters by name, for engines that name one ("default" needs no entry). */
  clusters?: Record<string, SimClusterSpec>;
  /** How many recent requests each engine keeps for /sim/stats (default 50). */
  recentRequests?: number;
}

export interface RunningEngine {
  spec: EngineSpec;
  /** http://127.0.0.1:PORT (HTTP/1.1). */
  url: string;
  /** http://127.0.0.1:PORT for plain gRPC over h2c, when started. */
  grpcUrl?: string;
  /** Mooncake bootstrap port, when started. */
  bootstrapPort?: number;
}

export interface RunningCluster {
  id: string;
  engines: RunningEngine[];
  engine(name: string): RunningEngine;
  /** A whole cluster goes away: its listeners close (new connections are refused) and its
   *  running requests end with an error, as on a power cut. Its engines stay down. */
  killCluster(name: string): Promise<void>;
  /** Changes a cluster's network delay from now on. */
  setNetworkDelay(name: string, ms: number): void;
  close(): Promise<void>;
}

/** One request as the engine received it. `body` is the GenerateRequest in proto JSON form
 *  (toJson, proto field names) for gRPC, or the JSON body for the OpenAI API. */
export interface RecordedRequest {
  surface: "grpc" | "openai";
  /** RPC name ("Generate", "Abort", ...) or HTTP route ("/v1/chat/completions"). */
  method: string;
  /** Protocol the engine saw: "connect" | "grpc-web" | "grpc" | "http". */
  protocol: string;
  requestId?: string;
  body: unknown;
  receivedAt: number;
  /** Request headers (lower-case names) as the engine saw them, for trace/header assertions. */
  headers?: Record<string, string>;
}

export interface EngineStats {
  engine: string;
  /** The engine's cluster ("default" unless its spec names one). */
  cluster: string;
  role: EngineRole;
  kvConnector: SimConnector;
  /** Requests whose prompt this engine computed (prefill forward passes). */
  prefillComputations: number;
  /** Prompt tokens computed ("GPU work"), including recomputation after a refused pull. */
  promptTokensComputed: number;
  /** Generate / OpenAI requests that produced output tokens beyond a length-1 prefill. */
  decodeRequests: number;
  /** Generate calls + OpenAI generation requests received, in total. */
  generateRequests: number;
  /** Pulls this engine served to a decode engine (blocks freed by the pull). */
  kvPullsServed: number;
  /** Pulls this engine refused (already consumed, expired, unknown). */
  kvPullsRefused: number;
  /** Pulls this engine (as decode) made that were refused, so it recomputed the prompt. */
  kvRecomputes: number;
  /** n>1 decode children whose blocks were freed under them by a sibling's pull. */
  kvSiblingHazards: number;
  /** Blocks pinned right now (awaiting a pull or lease expiry). */
  blocksPinned: number;
  /** Pinned handoffs right now. */
  handoffsPinned: number;
  /** Leases that expired with blocks still pinned. */
  leasesExpired: number;
  /** Handoffs released early because the decode side rejected / aborted the transfer. */
  transfersRejected: number;
  /** Abort RPC calls received, and the request ids named in them. */
  abortsReceived: number;
  abortedRequestIds: string[];
  /** Aborted request ids that had already finished and still held a handoff here: the blocks
   *  stayed pinned (vLLM PR 25067). */
  abortsIgnored: number;
  /** Generate streams the client cancelled (transport-level), without an Abort RPC. */
  streamsCancelled: number;
  /** Aborts / client cancels that arrived while this engine (as decode) was pulling KV: the
   *  hazard the gateway's deferred decode abort avoids. The prefill's blocks stay pinned until
   *  their lease expires. Always present in GET /sim/stats. */
  abortsDuringPull?: number;
  /** Pulls this engine (as decode) completed, so it did not compute the prompt. Always present. */
  kvPullsCompleted?: number;
  /** Early releases this engine (as decode) sent to a prefill engine. Always present. */
  kvReleasesSent?: number;
  /** Generation requests whose connection a dropConnection fault closed. Always present. */
  connectionsDropped?: number;
  /** Pulls of this engine's handoffs by a decode engine of another cluster (refused): a
   *  gateway that paired engines across clusters. Always present. */
  crossClusterPulls?: number;
  /** Requests running now. */
  activeRequests: number;
  recent: RecordedRequest[];
}
