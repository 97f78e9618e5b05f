// What a registry engine's name and model may look like, and the check every stored or
// received registry entry passes before it is used. Names and models are user-supplied (admin
// API) and end up as keys in routing tables, URL paths and metric blobs: the patterns keep out
// spaces, control characters and leading punctuation (so "__proto__" is never a name), and
// everything keyed by them uses Maps or null-prototype objects, so a name like "constructor"
// is just a name. Pure.
import { CLUSTER_NAME_PATTERN, CLUSTER_NAME_RULE, transportSchema } from "../config/schema.js";
import { ENGINE_ROLES, type RegistryEngine } from "./registry-types.js";

/** Engine ids appear in URL paths (/admin/engines/:id): no slashes. */
export const ENGINE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const ENGINE_ID_RULE = "must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit";

/** Models may carry an organisation prefix ("Qwen/Qwen3-8B"). */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
export const MODEL_NAME_RULE = "must be 1-128 letters, digits, '.', '_', ':', '/' or '-', starting with a letter or digit";

const ROLES = new Set<string>(ENGINE_ROLES);
/** Built on first use: touching the schema at module scope would build every zod schema at the
 *  isolate's start-up. */
let transports: Set<string> | undefined;
const TRANSPORTS = () => (transports ??= new Set<string>(transportSchema.options));
const STATUSES = new Set<string>(["active", "draining"]);

/** Why a registry entry (from storage or a snapshot) cannot be routed with, or undefined. */
export function registryEngineProblem(e: unknown): string | undefined {
  if (typeof e !== "object" || e === null) return "not an object";
  const r = e as Partial<Record<keyof RegistryEngine, unknown>>;
  if (typeof r.id !== "string" || !ENGINE_ID_PATTERN.test(r.id)) return `id ${JSON.stringify(r.id)} ${ENGINE_ID_RULE}`;
  if (typeof r.model !== "string" || !MODEL_NAME_PATTERN.test(r.model)) return `model ${JSON.stringify(r.model)} ${MODEL_NAME_RULE}`;
  if (typeof r.role !== "string" || !ROLES.has(r.role)) return `role ${JSON.stringify(r.role)} is not one of ${ENGINE_ROLES.join(", ")}`;
  if (typeof r.transport !== "string" || !TRANSPORTS().has(r.transport)) return `transport ${JSON.stringify(r.transport)} is not one of ${transportSchema.options.join(", ")}`;
  if (typeof r.status !== "string" || !STATUSES.has(r.status)) return `status ${JSON.stringify(r.status)} is not active or draining`;
  if (typeof r.url !== "string" || !isUrl(r.url)) return `url ${JSON.stringify(r.url)} is not a URL`;
  if (typeof r.labels !== "object" || r.labels === null || Array.isArray(r.labels)) return "labels is not an object";
  if (r.cluster !== undefined && (typeof r.cluster !== "string" || !CLUSTER_NAME_PATTERN.test(r.cluster))) return `cluster ${JSON.stringify(r.cluster)} ${CLUSTER_NAME_RULE}`;
  return undefined;
}

function isUrl(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}
