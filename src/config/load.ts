// Parses GATEWAY_CONFIG once per isolate (keyed by its value, so a changed var re-parses) and
// turns zod issues into one message that names each bad field. The var is JSON text, or an
// object when wrangler.toml writes it as a TOML table (wrangler then binds it as JSON).
import { DEFAULT_CLUSTER, gatewayConfigSchema, type EngineConfig, type GatewayConfig, type ModelPd, type ModelPolicies, type TokenizerSource, type REASONING_PARSERS, type TOOL_PARSERS } from "./schema.js";
import type * as z from "zod";

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    message: string,
    /** Each problem on its own, naming its field (for /health and check-config). */
    readonly problems: readonly string[] = [message],
  ) {
    super(message);
  }
}

export interface LoadedConfig extends Omit<GatewayConfig, "models"> {
  models: Record<string, LoadedModel>;
}
export interface LoadedModel {
  policy: ModelPolicies;
  /** The decider's thresholds. */
  pd: ModelPd;
  prefill: EngineConfig[];
  decode: EngineConfig[];
  encode: EngineConfig[];
  regular: EngineConfig[];
  /** Explicit tokenizer source (static config only; registry engines never carry one). */
  tokenizer?: TokenizerSource;
  /** How the OpenAI surface relays this model's SSE streams (schema.ts). */
  sse_relay: "inspect" | "native";
  /** How the VllmEngine surface relays this model's streamed Generate (schema.ts). */
  generate_relay: "frames" | "native";
  apis_via_chat: boolean;
  /** The configured tool-call and reasoning parsers; unset: chosen from the model
   *  (src/parsers/resolve.ts, docs/tools.md). */
  tool_parser?: (typeof TOOL_PARSERS)[number];
  reasoning_parser?: (typeof REASONING_PARSERS)[number];
}

/** GATEWAY_CONFIG as the runtime hands it over: JSON text, or a TOML table's object. */
export type GatewayConfigVar = string | object | undefined;

/** Module-level, not isolate state: one entry, a pure function of the var's text (the same
 *  text gives the same config in any app). `value` is the var as given (a string compares by content, an object by identity); `text`
 *  is its JSON, so an equal object handed over anew still hits. */
let cached: { value: unknown; text: string; config: LoadedConfig } | undefined;

export function loadConfig(value: GatewayConfigVar): LoadedConfig {
  if (cached && cached.value === value) return cached.config;
  const text = typeof value === "object" && value !== null ? JSON.stringify(value) : undefined;
  if (cached && text !== undefined && cached.text === text) {
    cached.value = value;
    return cached.config;
  }
  const config = parseConfig(value);
  cached = { value, text: text ?? String(value ?? ""), config };
  return config;
}

export function parseConfig(value: GatewayConfigVar): LoadedConfig {
  const parsed = gatewayConfigSchema.safeParse(rawConfig(value));
  if (!parsed.success) throw new ConfigError(`GATEWAY_CONFIG: ${describeIssues(parsed.error)}`, issueList(parsed.error));
  const unknown = unknownClusters(parsed.data);
  if (unknown.length > 0) throw new ConfigError(`GATEWAY_CONFIG: ${unknown.join("; ")}`, unknown);
  const models: Record<string, LoadedModel> = {};
  for (const [model, pools] of Object.entries(parsed.data.models)) {
    const name = (role: string) => (e: (typeof pools.prefill)[number], i: number): EngineConfig => ({
      ...e,
      name: e.name ?? `${model}/${role}-${i}`,
    });
    models[model] = {
      policy: pools.policy,
      pd: pools.pd,
      prefill: pools.prefill.map(name("prefill")),
      decode: pools.decode.map(name("decode")),
      encode: pools.encode.map(name("encode")),
      regular: pools.regular.map(name("regular")),
      sse_relay: pools.sse_relay,
      generate_relay: pools.generate_relay,
      apis_via_chat: pools.apis_via_chat,
      ...(pools.tokenizer ? { tokenizer: pools.tokenizer } : {}),
      ...(pools.tool_parser ? { tool_parser: pools.tool_parser } : {}),
      ...(pools.reasoning_parser ? { reasoning_parser: pools.reasoning_parser } : {}),
    };
  }
  return { ...parsed.data, models };
}

/** Engines naming a cluster the config does not describe (a typo would otherwise make a
 *  cluster of its own, placed nowhere). "default" needs no entry. */
function unknownClusters(config: GatewayConfig): string[] {
  const out: string[] = [];
  for (const [model, pools] of Object.entries(config.models)) {
    for (const role of ["prefill", "decode", "encode", "regular"] as const) {
      pools[role].forEach((e, i) => {
        if (e.cluster !== DEFAULT_CLUSTER && !Object.hasOwn(config.clusters, e.cluster)) {
          out.push(`models.${model}.${role}.${i}.cluster: "${e.cluster}" is not described in clusters`);
        }
      });
    }
  }
  return out;
}

/** The config document: the object itself, or the JSON text parsed. */
function rawConfig(value: unknown): unknown {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) throw new ConfigError("GATEWAY_CONFIG is not set");
  if (typeof value === "object") return value;
  if (typeof value !== "string") throw new ConfigError(`GATEWAY_CONFIG must be JSON text or a table, not a ${typeof value}`);
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new ConfigError(`GATEWAY_CONFIG is not valid JSON: ${(err as Error).message}`);
  }
}

export function describeIssues(error: z.ZodError): string {
  return issueList(error).join("; ");
}

function issueList(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`);
}
