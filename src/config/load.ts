// Parses GATEWAY_CONFIG once per isolate (keyed by the text, so a changed var re-parses) and
// turns zod issues into one message that names each bad field.
import { gatewayConfigSchema, type EngineConfig, type GatewayConfig, type ModelPd, type ModelPolicies, type TokenizerSource } from "./schema.js";
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

export interface LoadedConfig extends GatewayConfig {
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
}

let cached: { text: string; config: LoadedConfig } | undefined;

export function loadConfig(text: string | undefined): LoadedConfig {
  if (cached && cached.text === text) return cached.config;
  const config = parseConfig(text);
  cached = { text: text ?? "", config };
  return config;
}

export function parseConfig(text: string | undefined): LoadedConfig {
  if (text === undefined || text.trim() === "") throw new ConfigError("GATEWAY_CONFIG is not set");
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`GATEWAY_CONFIG is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = gatewayConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`GATEWAY_CONFIG: ${describeIssues(parsed.error)}`, issueList(parsed.error));
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
      ...(pools.tokenizer ? { tokenizer: pools.tokenizer } : {}),
    };
  }
  return { ...parsed.data, models };
}

export function describeIssues(error: z.ZodError): string {
  return issueList(error).join("; ");
}

function issueList(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`);
}
