// The gateway config schema (zod): models -> pools of engines. Parsed once per isolate from
// the GATEWAY_CONFIG var; every default lives here and is listed in docs/configuration.md.
// A namespace import: esbuild keeps only the members used (`import { z }` keeps all of zod,
// its locales included: ~110 KiB of gzip in the bundle).
import * as z from "zod";

/** The parser names a config may give (src/parsers/registry.ts; config imports nothing from
 *  the parsers layer, and a unit test keeps the two lists equal). */
export const TOOL_PARSERS = ["none", "hermes", "qwen3_coder", "llama3_json", "pythonic", "mistral", "deepseek_v3", "qwen", "qwen_xml", "qwen3_xml", "llama", "llama4_pythonic", "deepseek"] as const;
export const REASONING_PARSERS = ["none", "qwen3", "qwen3_thinking", "deepseek_r1"] as const;
/** Cluster names end up in headers (x-gateway-cluster), metric blobs and admin paths. */
export const CLUSTER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const CLUSTER_NAME_RULE = "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";
/** The cluster of an engine that names none. */
export const DEFAULT_CLUSTER = "default";

// Built on first use, not at the isolate's start-up (zod schema construction is most of what
// zod costs there): each export is a stand-in that builds every schema on its first touch.
function build() {
  const transportSchema = z.enum(["connect", "grpc-web", "openai-http"]);

  const engineSchema = z
    .object({
      /** Name in metrics, logs and the admin API (default "<model>/<role>-<i>"). */
      name: z.string().min(1).optional(),
      /** http(s)://host:port of the engine (or of its gRPC-web/Connect proxy). */
      url: z.url({ protocol: /^https?$/ }),
      /** "connect" or "grpc-web" (VllmEngine), or "openai-http" (a `vllm serve` OpenAI server). */
      transport: transportSchema.default("connect"),
      /** A Worker binding (a Workers VPC service, wrangler.toml vpc_services) that every request
       *  to this engine goes through, for engines on a private network; `url` is then the
       *  engine's address inside that network. */
      binding: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "must be a binding name (letters, digits, _)" }).optional(),
      /** Overrides the discovered connector ("NixlConnector", "MooncakeConnector", "" = none). */
      kv_connector: z.string().optional(),
      /** Base kv_transfer_config.engine_id (Mooncake); overrides discovery. */
      kv_engine_id: z.string().optional(),
      /** Pins requests to this data-parallel rank (data_parallel_rank). */
      dp_rank: z.number().int().min(0).optional(),
      /** Data-parallel size of the engine; overrides discovery (default 1). */
      dp_size: z.number().int().min(1).optional(),
      /** Mooncake bootstrap port of a prefill engine (default 8998). */
      bootstrap_port: z.number().int().min(1).max(65535).optional(),
      /** Free-form string labels. */
      labels: z.record(z.string(), z.string()).default({}),
      /** The cluster (one KV-transfer domain) the engine belongs to: a request's prefill, decode
       *  and encode engines always come from one cluster (docs/clusters.md). Any name other
       *  than "default" must be described in the top-level `clusters`. */
      cluster: z.string().regex(CLUSTER_NAME_PATTERN, { message: CLUSTER_NAME_RULE }).default("default"),
    })
    .strict();

  const clusterSchema = z
    .object({
      /** Where the cluster's engines are, in degrees: the client's nearest cluster serves it. */
      lat: z.number().min(-90).max(90),
      lon: z.number().min(-180).max(180),
      /** A label for operators (the admin API, docs); routing does not read it. */
      region: z.string().min(1).optional(),
    })
    .strict();

  const policySchema = z.enum(["round_robin", "random", "power_of_two", "prefix_hash", "consistent_hash"]);

  const tokenizerSourceSchema = z
    .object({
      /** A ZIP with tokenizer.json (and tokenizer_config.json, ...), as GetTokenizer would send. */
      url: z.url({ protocol: /^https?$/ }),
      /** Hex sha256 of the ZIP: checked on every load, and the cache key across isolates. */
      sha256: z
        .string()
        .regex(/^[0-9a-fA-F]{64}$/, { message: "must be 64 hex digits" })
        .transform((s) => s.toLowerCase())
        .optional(),
    })
    .strict();

  const modelPdSchema = z
    .object({
      /** Prompts with fewer tokens than this skip the prefill leg: decode computes them faster
       *  than the leg's serial round trip and KV pull. 0 = off. */
      decode_only_max_prompt_tokens: z.number().int().min(0).default(0),
      /** Skip the prefill leg while the selected prefill engine reports at least this many
       *  waiting requests (GetLoads; vllm:num_requests_waiting over HTTP). Unset = off. */
      prefill_queue_limit: z.number().int().min(1).optional(),
      /** ... and only while the decode engine reports fewer waiting than this (default: the
       *  prefill limit). */
      decode_queue_limit: z.number().int().min(1).optional(),
    })
    .strict()
    .default({ decode_only_max_prompt_tokens: 0 });

  const modelSchema = z
    .object({
      /** Selection policy per pool. */
      policy: z
        .object({
          prefill: policySchema.default("round_robin"),
          decode: policySchema.default("round_robin"),
          regular: policySchema.default("round_robin"),
        })
        .strict()
        .default({ prefill: "round_robin", decode: "round_robin", regular: "round_robin" }),
      /** Prefill engines (with decode engines: the model is served with PD). */
      prefill: z.array(engineSchema).default([]),
      /** Decode engines. */
      decode: z.array(engineSchema).default([]),
      /** Encode engines; their presence keeps the prefill leg for fan-out requests. */
      encode: z.array(engineSchema).default([]),
      /** Engines that serve whole requests (aggregated, non-PD). */
      regular: z.array(engineSchema).default([]),
      /** When the prefill leg pays for this model (docs/pd.md, "The decider"). */
      pd: modelPdSchema,
      /** Where the OpenAI surface gets this model's tokenizer when its VllmEngine engines have no
       *  GetTokenizer: a ZIP of the tokenizer files (docs/tokenizer.md). */
      tokenizer: tokenizerSourceSchema.optional(),
      /** How the OpenAI surface relays this model's SSE streams: "native" (the default) hands
       *  the engine's body to the runtime's own pipe and watches a copy behind it (about the
       *  pass-through's cost; an engine's in-band error event reaches the client as vLLM wrote
       *  it); "inspect" watches every chunk on its way (in-band errors rewritten). See
       *  docs/configuration.md. */
      sse_relay: z.enum(["inspect", "native"]).default("native"),
      /** How the VllmEngine surface relays this model's streamed Generate when the client's
       *  wire format is the engine's (binary, uncompressed, no deadline): "native" (the
       *  default) reads the engine's frames in JavaScript until the first decode frames went
       *  out, then pipes the rest of the body natively and watches a copy behind it (the
       *  engine's own end-of-stream frame reaches the client as the engine wrote it);
       *  "frames" reads every engine chunk in JavaScript (the gateway writes the end). See
       *  docs/configuration.md. */
      generate_relay: z.enum(["frames", "native"]).default("native"),
      /** Serve /v1/responses through the engines' chat completions, for
       *  openai-http engines whose vLLM lacks it (docs/responses-and-messages.md).
       *  VllmEngine-served models always go through chat. */
      apis_via_chat: z.boolean().default(false),
      /** The tool-call format of this model's replies on VllmEngine engines (vLLM's
       *  --tool-call-parser names; "none": no parsing). Unset: chosen from the model name and
       *  GetModelInfo's model_type (docs/tools.md). The list is src/parsers/registry.ts's. */
      tool_parser: z.enum(TOOL_PARSERS).optional(),
      /** The reasoning format of this model's replies ("none": no parsing). Unset: chosen as
       *  tool_parser is (docs/tools.md). */
      reasoning_parser: z.enum(REASONING_PARSERS).optional(),
    })
    .strict();

  const gatewayConfigSchema = z
    .object({
      /** The JSON Schema an editor validates the document with (schema/gateway-config.schema.json);
       *  ignored by the gateway. */
      $schema: z.string().optional(),
      /** Model name (the OpenAI `model` field, or the `x-model` header) -> its engine pools. */
      models: z.record(z.string().min(1), modelSchema),
      /** Clusters by name: where each one is (docs/clusters.md). Engines name theirs (`cluster`). */
      clusters: z.record(z.string().regex(CLUSTER_NAME_PATTERN, { message: CLUSTER_NAME_RULE }), clusterSchema).default({}),
      /** How a request's cluster is chosen (docs/clusters.md). */
      geo: z
        .object({
          /** A request header carrying the client's "lat,lon" (local runs, tests, a front proxy
           *  that knows better); honoured only when set. At the edge `request.cf` says where
           *  the client is. */
          header: z.string().regex(/^[A-Za-z0-9-]+$/, { message: "must be a header name" }).optional(),
          /** Keep a routing key (x-routing-key) on the cluster it was first served by while that
           *  cluster is healthy and not saturated, so its prefix caches stay warm (per isolate). */
          sticky: z.boolean().default(false),
          /** An engine that answered with a capacity status (retry.capacity_status_codes) counts as
           *  saturated for cluster choice this long (ms). */
          pushback_ms: z.number().int().min(0).max(600_000).default(2_000),
        })
        .strict()
        .default({ sticky: false, pushback_ms: 2_000 }),
      /** Request size limits and Abort limits per API key. */
      limits: z
        .object({
          /** Largest accepted request body, bytes. */
          max_body_bytes: z.number().int().min(1024).default(4 * 1024 * 1024),
          /** Largest n a client may ask for. */
          max_n: z.number().int().min(1).default(16),
          /** Largest accepted request header block (names + values), bytes. */
          max_header_bytes: z.number().int().min(1024).default(16 * 1024),
          /** Abort RPC calls one data-plane credential may have in flight per isolate; more get
           *  429, so an Abort flood cannot slow other tenants down. */
          max_concurrent_aborts_per_key: z.number().int().min(1).default(2),
          /** Request ids one data-plane credential may name in Abort calls per second per
           *  isolate (a one-second burst); a call beyond it gets 429 before any engine RPC. */
          abort_ids_per_second_per_key: z.number().int().min(64).default(256),
        })
        .strict()
        .default({ max_body_bytes: 4 * 1024 * 1024, max_n: 16, max_header_bytes: 16 * 1024, max_concurrent_aborts_per_key: 2, abort_ids_per_second_per_key: 256 }),
      /** Timeouts and caches of the PD pipeline. */
      pd: z
        .object({
          /** Cap on the deferred decode abort (ms); kept below the 30 s waitUntil budget. */
          deferred_abort_max_ms: z.number().int().min(0).max(29_000).default(25_000),
          /** How long discovered engine metadata (GetServerInfo) is cached per isolate (ms). */
          engine_info_ttl_ms: z.number().int().min(0).default(60_000),
          /** The prefill leg must finish within this (ms), else 504 prefill_timeout (retryable). */
          prefill_timeout_ms: z.number().int().min(1).default(60_000),
          /** Decode (or a regular engine) must send its first frame within this (ms), else 504. */
          first_frame_timeout_ms: z.number().int().min(1).default(60_000),
          /** A streamed Generate writes an empty GenerateResponse this often (ms) between its
           *  early head and its first message, so a client that leaves during prefill is seen
           *  (the runtime passes a close on only when body bytes are written). 0: off. */
          stream_keepalive_ms: z
            .number()
            .int()
            .min(0)
            .max(60_000)
            .refine((ms) => ms === 0 || ms >= 50, "0 (off) or at least 50")
            .default(0),
        })
        .strict()
        .default({ deferred_abort_max_ms: 25_000, engine_info_ttl_ms: 60_000, prefill_timeout_ms: 60_000, first_frame_timeout_ms: 60_000, stream_keepalive_ms: 0 }),
      /** What one request may cost an isolate, beyond the limits above (docs/configuration.md). */
      bounds: z
        .object({
          /** Per model: the largest prompt (UTF-8 bytes of the prompt, or of the rendered chat)
           *  the gateway tokenizes for VllmEngine engines. Lowers the bound derived from the
           *  context length (docs/tokenizer.md, "Bounds"); larger prompts get 400
           *  context_length_exceeded before any tokenizing. */
          max_prompt_bytes: z.record(z.string().min(1), z.number().int().min(1)).default({}),
          /** Largest single SSE event an OpenAI relay holds while it waits for the event's end;
           *  beyond it the stream ends with the gateway's <leg>_event_too_large error event. */
          max_sse_event_bytes: z.number().int().min(1024).default(8 * 1024 * 1024),
        })
        .strict()
        .default({ max_prompt_bytes: {}, max_sse_event_bytes: 8 * 1024 * 1024 }),
      /** Active health checks (upstream defaults). */
      health: z
        .object({
          /** Seconds between probe rounds (the registry's alarm; below a minute works). */
          interval_secs: z.number().int().min(1).default(60),
          /** A probe that takes longer fails. */
          timeout_secs: z.number().int().min(1).default(5),
          /** Consecutive successes that make a pending or not_ready engine ready. */
          success_threshold: z.number().int().min(1).default(2),
          /** Consecutive failures that make a ready (or pending) engine not_ready. */
          failure_threshold: z.number().int().min(1).default(3),
          /** Path probed on openai-http engines (VllmEngine engines get the HealthCheck RPC). */
          endpoint: z.string().startsWith("/").default("/health"),
          /** Probe nothing; every engine counts as routable as far as health goes. */
          disabled: z.boolean().default(false),
        })
        .strict()
        .default({ interval_secs: 60, timeout_secs: 5, success_threshold: 2, failure_threshold: 3, endpoint: "/health", disabled: false }),
      /** Circuit breaker per engine (upstream router defaults). */
      breaker: z
        .object({
          /** Consecutive failures that open a closed breaker. */
          failure_threshold: z.number().int().min(1).default(10),
          /** Consecutive successes that close a half-open breaker. */
          success_threshold: z.number().int().min(1).default(3),
          /** An open breaker turns half-open this long after it opened. */
          timeout_secs: z.number().min(0).default(60),
          /** Breakers never open. */
          disabled: z.boolean().default(false),
        })
        .strict()
        .default({ failure_threshold: 10, success_threshold: 3, timeout_secs: 60, disabled: false }),
      /** Retries of a failed attempt that sent nothing to the client yet (upstream defaults). */
      retry: z
        .object({
          /** Total attempts, including the first. */
          max_retries: z.number().int().min(1).max(20).default(5),
          /** Wait before the first retry. */
          initial_backoff_ms: z.number().int().min(0).default(50),
          /** Cap on one wait. */
          max_backoff_ms: z.number().int().min(0).default(30_000),
          /** Each wait is the previous one times this. */
          backoff_multiplier: z.number().min(1).default(1.5),
          /** Each wait varies by up to +- this fraction. */
          jitter_factor: z.number().min(0).max(1).default(0.2),
          /** Budget for all backoff sleeps of one request. */
          max_total_backoff_ms: z.number().int().min(0).default(5_000),
          /** Engine statuses that mean "full": retried on another engine, never a breaker
           *  success or failure (upstream capacity pushback). */
          capacity_status_codes: z.array(z.number().int().min(400).max(599)).default([429]),
          /** One attempt only. */
          disabled: z.boolean().default(false),
          /** One request's deadline for its answer to start (ms): every attempt, backoff and
           *  per-leg timeout of the request fits in it (docs/configuration.md, `retry`). */
          deadline_ms: z.number().int().min(1_000).default(120_000),
        })
        .strict()
        .default({ max_retries: 5, initial_backoff_ms: 50, max_backoff_ms: 30_000, backoff_multiplier: 1.5, jitter_factor: 0.2, max_total_backoff_ms: 5_000, capacity_status_codes: [429], disabled: false, deadline_ms: 120_000 }),
      /** Engines added at run time through the admin API. */
      registry: z
        .object({
          /** Host patterns an engine URL may use ("*.example.com", "10.0.0.*", "127.0.0.1"); empty = none allowed. */
          allowed_hosts: z.array(z.string().min(1)).default([]),
          /** How long a per-isolate snapshot of the registry is used before a background refresh (ms). */
          snapshot_ttl_ms: z.number().int().min(0).default(5_000),
        })
        .strict()
        .default({ allowed_hosts: [], snapshot_ttl_ms: 5_000 }),
      /** GetLoads polling for power_of_two. */
      loads: z
        .object({
          /** Poll engines' GetLoads instead of counting in-flight requests per isolate. */
          enabled: z.boolean().default(false),
          /** How long a GetLoads answer is used. */
          ttl_ms: z.number().int().min(100).default(10_000),
        })
        .strict()
        .default({ enabled: false, ttl_ms: 10_000 }),
      /** Data-plane authentication. Keys come from the API_KEYS secret (comma-separated). */
      auth: z
        .object({
          /** "api_keys": every /v1 and VllmEngine request needs `Authorization: Bearer <key>`;
           *  "open": no key needed (only say so explicitly). */
          data_plane: z.enum(["api_keys", "open"]).default("api_keys"),
        })
        .strict()
        .default({ data_plane: "api_keys" }),
      /** CORS for browser Connect / gRPC-web / OpenAI clients. */
      cors: z
        .object({
          /** Exact origins ("https://app.example.com") or "*"; empty = no CORS headers. */
          allowed_origins: z.array(z.string().min(1)).default([]),
          /** Preflight cache time. */
          max_age_secs: z.number().int().min(0).default(600),
        })
        .strict()
        .default({ allowed_origins: [], max_age_secs: 600 }),
      /** The Responses API's stored responses (`store`, previous_response_id; docs/responses-and-messages.md). */
      responses: z
        .object({
          /** How long a stored response can be read or continued (OpenAI keeps them 30 days). */
          store_ttl_secs: z.number().int().min(1).default(30 * 24 * 3600),
          /** Largest conversation (earlier turns, expanded) one response may carry, in UTF-8 bytes. */
          max_conversation_bytes: z.number().int().min(1024).default(16 * 1024 * 1024),
        })
        .strict()
        .default({ store_ttl_secs: 30 * 24 * 3600, max_conversation_bytes: 16 * 1024 * 1024 }),
      /** Switches for benchmarks and tests. */
      debug: z
        .object({
          /** Honour the `x-pd-override` request header (benchmarks and tests only). */
          allow_pd_overrides: z.boolean().default(false),
          /** Log (console.debug) the path each request took: the prefill leg skipped, the raw
           *  frames relay, the native tail. Off by default: a log line per request costs CPU
           *  (measured under wrangler dev: about 0.3 ms a line) and log volume. */
          log_paths: z.boolean().default(false),
        })
        .strict()
        .default({ allow_pd_overrides: false, log_paths: false }),
    })
    .strict();

  return { transportSchema, engineSchema, clusterSchema, policySchema, tokenizerSourceSchema, modelSchema, gatewayConfigSchema };
}

type Schemas = ReturnType<typeof build>;
// Module-level, not isolate state: the schemas are code, the same for every app.
let built: Schemas | undefined;
const schemas = (): Schemas => (built ??= build());
/** The real schema objects, not their stand-ins: for tools that key on identity (the JSON
 *  Schema generator, scripts/config-json-schema.ts). */
export const configSchemas = schemas;

/** A stand-in for the schema `pick` returns, forwarding everything to it. */
function lazySchema<K extends keyof Schemas>(key: K): Schemas[K] {
  const real = () => schemas()[key] as object;
  return new Proxy({} as Schemas[K], {
    get: (_t, k) => Reflect.get(real(), k),
    has: (_t, k) => Reflect.has(real(), k),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_t, k) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), k);
      return d && { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}

export const transportSchema = lazySchema("transportSchema");
export const engineSchema = lazySchema("engineSchema");
export const clusterSchema = lazySchema("clusterSchema");
export const policySchema = lazySchema("policySchema");
export const tokenizerSourceSchema = lazySchema("tokenizerSourceSchema");
export const modelSchema = lazySchema("modelSchema");
export const gatewayConfigSchema = lazySchema("gatewayConfigSchema");

export type EngineTransport = z.infer<typeof transportSchema>;
export type EngineConfigInput = z.input<typeof engineSchema>;
export type PolicyName = z.infer<typeof policySchema>;
export type TokenizerSource = z.infer<typeof tokenizerSourceSchema>;
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type ModelPools = GatewayConfig["models"][string];
export type ModelPolicies = ModelPools["policy"];
export type ModelPd = ModelPools["pd"];
export type EngineConfig = Omit<z.infer<typeof engineSchema>, "cluster"> & {
  name: string;
  /** Absent on hand-built entries (tests, registry rows from before clusters): "default". */
  cluster?: string;
};
export type ClusterConfig = z.infer<typeof clusterSchema>;
export type EngineRole = "prefill" | "decode" | "encode" | "regular";
