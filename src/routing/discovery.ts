// Registration-time discovery (pd-reference 7.2): VllmEngine engines answer GetServerInfo and
// GetModelInfo, vLLM OpenAI servers answer GET /v1/models. Registration is refused when the
// engine cannot be reached (502 engine_unreachable, saying which call failed) or does not
// serve the model it is registered for (400 engine_model_mismatch): a typo'd URL or model
// should fail at the admin API, not on the first client request.
import type { MessageShape } from "@bufbuild/protobuf";
import type { EngineConnections } from "../backends/engine-clients.js";
import { engineRouteUrl } from "../backends/openai-http.js";
import type { EngineTransport } from "../config/schema.js";
import type { GetModelInfoResponseSchema, GetServerInfoResponseSchema } from "../gen/vllm_engine_pb.js";
import { GatewayError } from "../core/errors.js";
import type { DiscoveredMeta } from "./registry-types.js";

type ServerInfo = MessageShape<typeof GetServerInfoResponseSchema>;
type ModelInfo = MessageShape<typeof GetModelInfoResponseSchema>;

export interface DiscoveryTarget {
  url: string;
  transport: EngineTransport;
  model: string;
  /** The Worker binding its requests go through (Workers VPC), if any. */
  binding?: string;
}

export async function discoverEngine(t: DiscoveryTarget, timeoutSecs: number, engines: EngineConnections): Promise<DiscoveredMeta> {
  return t.transport === "openai-http" ? discoverHttp(t, timeoutSecs, engines) : discoverVllm(t, timeoutSecs, engines);
}

async function discoverVllm(t: DiscoveryTarget, timeoutSecs: number, engines: EngineConnections): Promise<DiscoveredMeta> {
  const client = engines.vllmEngine(t);
  const opts = { timeoutMs: timeoutSecs * 1000 };
  const call = async <R>(name: string, p: Promise<R>): Promise<R> => {
    try {
      return await p;
    } catch (err) {
      throw unreachable(t.url, `${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const [server, model] = await Promise.all([
    call("GetServerInfo", client.getServerInfo({}, opts)),
    call("GetModelInfo", client.getModelInfo({}, opts)),
  ]);
  checkServedModel(t.model, [model.servedModelName]);
  return flattenVllmInfo(server, model);
}

async function discoverHttp(t: DiscoveryTarget, timeoutSecs: number, engines: EngineConnections): Promise<DiscoveredMeta> {
  const url = engineRouteUrl(t.url, "/v1/models");
  let body: unknown;
  try {
    const res = await engines.fetchFor(t)(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutSecs * 1000) });
    if (!res.ok) {
      await res.body?.cancel();
      throw unreachable(t.url, `GET /v1/models answered ${res.status}`);
    }
    body = await res.json();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    const e = err as Error;
    const why = e?.name === "TimeoutError" ? `did not answer within ${timeoutSecs} s` : `failed: ${e?.message ?? String(err)}`;
    throw unreachable(t.url, `GET /v1/models ${why}`);
  }
  const models = modelEntries(body);
  if (!models) throw unreachable(t.url, "GET /v1/models did not answer an OpenAI model list");
  checkServedModel(t.model, models.map((m) => m.id));
  return flattenHttpModel(models.find((m) => m.id === t.model)!);
}

function unreachable(url: string, what: string): GatewayError {
  return new GatewayError("engine_unreachable", 502, `engine ${url} is unreachable: ${what}`, undefined, "url");
}

/** The model must be one the engine serves, by exact name. Pure; throws a 400 naming `model`. */
export function checkServedModel(model: string, served: string[]): void {
  if (served.includes(model)) return;
  const list = served.filter((s) => s !== "").map((s) => `"${s}"`).join(", ") || "no model name";
  throw new GatewayError("engine_model_mismatch", 400, `model: the engine serves ${list}, not "${model}"`, undefined, "model");
}

/** Upstream's label flattening (discover_metadata.rs): empty strings and numeric zeros are
 *  dropped, booleans and non-empty arrays kept, data_parallel_size renamed dp_size, and the
 *  volatile fields (active_requests, is_paused, timestamps, uptime, server_type) left out. Pure. */
export function flattenVllmInfo(server: ServerInfo, model: ModelInfo): DiscoveredMeta {
  const out: DiscoveredMeta = {};
  const put = (key: string, v: string | number | boolean | string[] | number[]) => {
    if (v === "" || v === 0 || (Array.isArray(v) && v.length === 0)) return;
    out[key] = v;
  };
  put("served_model_name", model.servedModelName);
  put("model_path", model.modelPath);
  put("tokenizer_path", model.tokenizerPath);
  put("model_type", model.modelType);
  put("architectures", [...model.architectures]);
  put("is_generation", model.isGeneration);
  put("supports_vision", model.supportsVision);
  put("max_context_length", model.maxContextLength);
  put("max_req_input_len", model.maxReqInputLen);
  put("vocab_size", model.vocabSize);
  put("eos_token_ids", [...model.eosTokenIds]);
  put("kv_connector", server.kvConnector);
  put("kv_role", server.kvRole);
  put("kv_engine_id", server.kvEngineId);
  put("dp_size", server.dataParallelSize);
  return out;
}

interface HttpModel {
  id: string;
  [key: string]: unknown;
}

function modelEntries(body: unknown): HttpModel[] | undefined {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  return data.filter((m): m is HttpModel => typeof m === "object" && m !== null && typeof (m as HttpModel).id === "string");
}

/** What vLLM's /v1/models says about one model. Pure. */
export function flattenHttpModel(m: HttpModel): DiscoveredMeta {
  const out: DiscoveredMeta = { served_model_name: m.id };
  if (typeof m.root === "string" && m.root !== "") out.model_path = m.root;
  if (typeof m.max_model_len === "number" && m.max_model_len > 0) out.max_context_length = m.max_model_len;
  if (typeof m.owned_by === "string" && m.owned_by !== "") out.owned_by = m.owned_by;
  return out;
}
