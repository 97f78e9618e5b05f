// The gateway config schema (zod): models -> pools of engines. Parsed once per isolate from
// the GATEWAY_CONFIG var; every default lives here and is listed in docs/configuration.md.
import { z } from "zod";

export const transportSchema = z.enum(["connect", "grpc-web", "openai-http"]);
export type EngineTransport = z.infer<typeof transportSchema>;

export const engineSchema = z
  .object({
    name: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/ }),
    transport: transportSchema.default("connect"),
    /** Overrides the discovered connector ("NixlConnector", "MooncakeConnector", "" = none). */
    kv_connector: z.string().optional(),
    kv_engine_id: z.string().optional(),
    dp_rank: z.number().int().min(0).optional(),
    dp_size: z.number().int().min(1).optional(),
    /** Mooncake bootstrap port of a prefill engine (default 8998). */
    bootstrap_port: z.number().int().min(1).max(65535).optional(),
    labels: z.record(z.string(), z.string()).default({}),
  })
  .strict();
export type EngineConfigInput = z.input<typeof engineSchema>;

export const modelSchema = z
  .object({
    prefill: z.array(engineSchema).default([]),
    decode: z.array(engineSchema).default([]),
    encode: z.array(engineSchema).default([]),
    /** Engines that serve whole requests (aggregated, non-PD). */
    regular: z.array(engineSchema).default([]),
  })
  .strict();

export const gatewayConfigSchema = z
  .object({
    models: z.record(z.string().min(1), modelSchema),
    limits: z
      .object({
        /** Largest accepted request body, bytes. */
        max_body_bytes: z.number().int().min(1024).default(4 * 1024 * 1024),
        /** Largest n a client may ask for. */
        max_n: z.number().int().min(1).default(16),
      })
      .strict()
      .default({ max_body_bytes: 4 * 1024 * 1024, max_n: 16 }),
    pd: z
      .object({
        /** Cap on the deferred decode abort (ms); kept below the 30 s waitUntil budget. */
        deferred_abort_max_ms: z.number().int().min(0).max(29_000).default(25_000),
        /** How long discovered engine metadata (GetServerInfo) is cached per isolate (ms). */
        engine_info_ttl_ms: z.number().int().min(0).default(60_000),
      })
      .strict()
      .default({ deferred_abort_max_ms: 25_000, engine_info_ttl_ms: 60_000 }),
    debug: z
      .object({
        /** Honour the `x-pd-override` request header (benchmarks and tests only). */
        allow_pd_overrides: z.boolean().default(false),
      })
      .strict()
      .default({ allow_pd_overrides: false }),
  })
  .strict();

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type ModelPools = GatewayConfig["models"][string];
export type EngineConfig = z.infer<typeof engineSchema> & { name: string };
export type EngineRole = "prefill" | "decode" | "encode" | "regular";
