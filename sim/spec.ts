// Validation of cluster specs (from JSON files and the control API) and the defaults every
// engine runs with. Errors name the offending field, e.g. "engines[1].role: must be one of ...".
import { validateFaultList } from "./faults.js";
import type { ClusterSpec, EngineSpec, SimLatency } from "./types.js";

export class SpecError extends Error {}

export const DEFAULT_LATENCY: Required<SimLatency> = {
  perPromptTokenMs: 0.05,
  perOutputTokenMs: 2,
  perBlockPullMs: 0.01,
  pullSetupMs: 2,
};
export const DEFAULT_MODEL = "sim-model";
export const DEFAULT_CLUSTER = "default";
/** VLLM_NIXL_ABORT_REQUEST_TIMEOUT, the lease on a finished prefill's handoff: 480 s in older
 *  vLLM releases, 30 s in newer ones. A handoff no decode engine pulls (or rejects) holds its
 *  blocks this long, and an Abort does not shorten it (vLLM PR 25067). */
export const VLLM_NIXL_ABORT_REQUEST_TIMEOUT_OLDER_MS = 480_000;
export const VLLM_NIXL_ABORT_REQUEST_TIMEOUT_NEWER_MS = 30_000;
/** The sim follows current vLLM (see docs/sim.md); set `leaseMs` to the older value to
 *  measure what a stranded handoff costs against an older engine. */
export const DEFAULT_LEASE_MS = VLLM_NIXL_ABORT_REQUEST_TIMEOUT_NEWER_MS;
/** uvicorn's timeout_keep_alive default, which `vllm serve` keeps (VLLM_HTTP_TIMEOUT_KEEP_ALIVE). */
export const DEFAULT_KEEP_ALIVE_MS = 5_000;
export const DEFAULT_BLOCK_SIZE = 16;
export const DEFAULT_CAPACITY_BLOCKS = 8192;
export const DEFAULT_RECENT = 50;
/** vLLM's default output cap when a request sets no max_tokens. */
export const DEFAULT_MAX_TOKENS = 16;
/** max_context_length / max_model_len the sim reports and enforces. */
export const MAX_CONTEXT = 32_768;
export const MAX_N = 256;

const ROLES = ["prefill", "decode", "both", "encode"];
const CONNECTORS = ["NixlConnector", "MooncakeConnector", "none"];
const ENGINE_FIELDS = [
  "name", "role", "kvConnector", "kvEngineId", "dataParallelSize", "model", "port", "grpcPort",
  "bootstrapPort", "leaseMs", "keepAliveTimeoutMs", "blockSize", "latency", "faults", "kvCapacityBlocks", "kvHandoffByDefault", "cluster",
  "toolCallParser", "enableAutoToolChoice", "reasoningParser",
];

function fail(path: string, msg: string): never {
  throw new SpecError(`${path}: ${msg}`);
}

function checkInt(v: unknown, path: string, min: number, max: number): void {
  if (v === undefined) return;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    fail(path, `must be an integer in ${min}..${max}`);
  }
}

function checkNumber(v: unknown, path: string): void {
  if (v === undefined) return;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) fail(path, "must be a non-negative number");
}

function checkString(v: unknown, path: string): void {
  if (v !== undefined && typeof v !== "string") fail(path, "must be a string");
}

function validateEngine(value: unknown, path: string): EngineSpec {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(path, "must be an object");
  const e = value as Record<string, unknown>;
  for (const k of Object.keys(e)) if (!ENGINE_FIELDS.includes(k)) fail(`${path}.${k}`, "unknown field");
  if (typeof e.name !== "string" || e.name.length === 0) fail(`${path}.name`, "must be a non-empty string");
  if (!ROLES.includes(e.role as string)) fail(`${path}.role`, `must be one of ${ROLES.join(", ")}`);
  if (!CONNECTORS.includes(e.kvConnector as string)) {
    fail(`${path}.kvConnector`, `must be one of ${CONNECTORS.join(", ")}`);
  }
  checkString(e.kvEngineId, `${path}.kvEngineId`);
  checkString(e.model, `${path}.model`);
  if (e.model === "") fail(`${path}.model`, "must not be empty");
  checkInt(e.dataParallelSize, `${path}.dataParallelSize`, 1, 1024);
  checkInt(e.port, `${path}.port`, 0, 65535);
  checkInt(e.grpcPort, `${path}.grpcPort`, 0, 65535);
  checkInt(e.bootstrapPort, `${path}.bootstrapPort`, 0, 65535);
  if (e.bootstrapPort !== undefined && e.kvConnector !== "MooncakeConnector") {
    fail(`${path}.bootstrapPort`, "only MooncakeConnector engines have a bootstrap listener");
  }
  checkInt(e.leaseMs, `${path}.leaseMs`, 1, 86_400_000);
  checkInt(e.keepAliveTimeoutMs, `${path}.keepAliveTimeoutMs`, 1, 3_600_000);
  checkInt(e.blockSize, `${path}.blockSize`, 1, 4096);
  checkInt(e.kvCapacityBlocks, `${path}.kvCapacityBlocks`, 1, 1 << 30);
  if (e.kvHandoffByDefault !== undefined && typeof e.kvHandoffByDefault !== "boolean") fail(`${path}.kvHandoffByDefault`, "must be a boolean");
  if (e.cluster !== undefined && (typeof e.cluster !== "string" || e.cluster === "")) fail(`${path}.cluster`, "must be a non-empty string");
  if (e.toolCallParser !== undefined && e.toolCallParser !== "hermes") fail(`${path}.toolCallParser`, 'must be "hermes"');
  if (e.reasoningParser !== undefined && e.reasoningParser !== "qwen3") fail(`${path}.reasoningParser`, 'must be "qwen3"');
  if (e.enableAutoToolChoice !== undefined && typeof e.enableAutoToolChoice !== "boolean") fail(`${path}.enableAutoToolChoice`, "must be a boolean");
  if (e.latency !== undefined) {
    if (typeof e.latency !== "object" || e.latency === null || Array.isArray(e.latency)) fail(`${path}.latency`, "must be an object");
    const l = e.latency as Record<string, unknown>;
    for (const k of Object.keys(l)) {
      if (!(k in DEFAULT_LATENCY)) fail(`${path}.latency.${k}`, "unknown field");
      checkNumber(l[k], `${path}.latency.${k}`);
    }
  }
  if (e.faults !== undefined) {
    if (!Array.isArray(e.faults)) fail(`${path}.faults`, "must be an array");
    try {
      validateFaultList(e.faults, `${path}.faults`);
    } catch (err) {
      throw new SpecError((err as Error).message);
    }
  }
  return e as unknown as EngineSpec;
}

/** Checks a parsed JSON value is a ClusterSpec; throws SpecError naming the field otherwise. */
export function validateClusterSpec(value: unknown): ClusterSpec {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("spec", "must be an object");
  const s = value as Record<string, unknown>;
  for (const k of Object.keys(s)) if (k !== "engines" && k !== "recentRequests" && k !== "clusters") fail(k, "unknown field");
  const clusters = validateClusters(s.clusters);
  if (!Array.isArray(s.engines) || s.engines.length === 0) fail("engines", "must be a non-empty array");
  checkInt(s.recentRequests, "recentRequests", 0, 100_000);
  const names = new Set<string>();
  const ports = new Map<number, string>();
  s.engines.forEach((raw, i) => {
    const e = validateEngine(raw, `engines[${i}]`);
    if (e.cluster !== undefined && e.cluster !== DEFAULT_CLUSTER && !clusters.has(e.cluster)) fail(`engines[${i}].cluster`, `"${e.cluster}" is not in clusters`);
    if (names.has(e.name)) fail(`engines[${i}].name`, `duplicate engine name "${e.name}"`);
    names.add(e.name);
    for (const field of ["port", "grpcPort", "bootstrapPort"] as const) {
      const p = e[field];
      if (p === undefined || p === 0) continue;
      const other = ports.get(p);
      if (other !== undefined) fail(`engines[${i}].${field}`, `port ${p} already used by ${other}`);
      ports.set(p, `engines[${i}].${field}`);
    }
  });
  return s as unknown as ClusterSpec;
}

function validateClusters(value: unknown): Set<string> {
  if (value === undefined) return new Set();
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("clusters", "must be an object");
  for (const [name, c] of Object.entries(value)) {
    if (typeof c !== "object" || c === null || Array.isArray(c)) fail(`clusters.${name}`, "must be an object");
    for (const k of Object.keys(c)) if (k !== "networkDelayMs") fail(`clusters.${name}.${k}`, "unknown field");
    checkInt((c as Record<string, unknown>).networkDelayMs, `clusters.${name}.networkDelayMs`, 0, 60_000);
  }
  return new Set(Object.keys(value));
}

/** An engine spec with every default filled in: what the engine actually runs with. */
export interface EngineConfig {
  name: string;
  cluster: string;
  role: EngineSpec["role"];
  kvConnector: EngineSpec["kvConnector"];
  kvEngineId: string;
  dataParallelSize: number;
  model: string;
  leaseMs: number;
  keepAliveTimeoutMs: number;
  blockSize: number;
  kvCapacityBlocks: number;
  kvHandoffByDefault: boolean;
  toolCallParser: EngineSpec["toolCallParser"];
  enableAutoToolChoice: boolean;
  reasoningParser: EngineSpec["reasoningParser"];
  latency: Required<SimLatency>;
  recentRequests: number;
}

export function engineConfig(spec: EngineSpec, recentRequests = DEFAULT_RECENT): EngineConfig {
  return {
    name: spec.name,
    cluster: spec.cluster ?? DEFAULT_CLUSTER,
    role: spec.role,
    kvConnector: spec.kvConnector,
    kvEngineId: spec.kvEngineId ?? "",
    dataParallelSize: spec.dataParallelSize ?? 1,
    model: spec.model ?? DEFAULT_MODEL,
    leaseMs: spec.leaseMs ?? DEFAULT_LEASE_MS,
    keepAliveTimeoutMs: spec.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_MS,
    blockSize: spec.blockSize ?? DEFAULT_BLOCK_SIZE,
    kvCapacityBlocks: spec.kvCapacityBlocks ?? DEFAULT_CAPACITY_BLOCKS,
    kvHandoffByDefault: spec.kvHandoffByDefault ?? false,
    toolCallParser: spec.toolCallParser,
    enableAutoToolChoice: spec.enableAutoToolChoice ?? false,
    reasoningParser: spec.reasoningParser,
    latency: { ...DEFAULT_LATENCY, ...spec.latency },
    recentRequests,
  };
}
