// Turns a validated admin body into a registry engine: URL rules and allowlist, conflicts
// with config and registry engines, then discovery. The checks that cost nothing run before
// discovery contacts the engine; the object re-checks conflicts atomically when it stores.
import type { LoadedConfig } from "../../config/load.js";
import { GatewayError } from "../../core/errors.js";
import { DEFAULT_CLUSTER } from "../../config/schema.js";
import { discoverEngine } from "../../routing/discovery.js";
import type { EngineClients } from "../../backends/engine-clients.js";
import { checkEngineUrl, normalizeEngineUrl } from "../../routing/engine-url.js";
import type { RegistryStub } from "../../routing/registry-client.js";
import { ENGINE_ROLES, type NewRegistryEngine } from "../../routing/registry-types.js";
import type { RegisterBody } from "./bodies.js";

const conflict = (message: string, param: string) => new GatewayError("engine_exists", 409, message, undefined, param);

export function newEngineId(): string {
  return `eng-${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
}

/** `id` is the engine being replaced (PUT), whose own URL is no conflict. */
export async function prepareEngine(
  body: RegisterBody,
  config: LoadedConfig,
  stub: RegistryStub,
  id: string,
  replacing: boolean,
  engines: EngineClients,
): Promise<NewRegistryEngine> {
  // A binding-routed engine's URL is its private address: allowed_hosts covers it all the same.
  const check = checkEngineUrl(body.url, config.registry.allowed_hosts);
  if (!check.ok) throw new GatewayError(check.code, check.status, check.message, undefined, "url");
  if (body.binding !== undefined && !engines.hasFetchBinding(body.binding)) {
    throw new GatewayError("invalid_request", 400, `binding: the Worker has no binding ${body.binding} (declare it in wrangler.toml vpc_services)`, undefined, "binding");
  }
  const url = check.url;
  if (body.cluster !== DEFAULT_CLUSTER && !Object.hasOwn(config.clusters, body.cluster)) {
    throw new GatewayError("invalid_request", 400, `cluster: "${body.cluster}" is not described in the config's clusters`, undefined, "cluster");
  }

  for (const [model, pools] of Object.entries(config.models)) {
    for (const role of ENGINE_ROLES) {
      for (const e of pools[role]) {
        if (e.name === id) throw conflict(`name: "${id}" is the name of a config engine`, "name");
        if (model === body.model && role === body.role && normalizeEngineUrl(e.url) === url) {
          throw conflict(`url: ${url} is already a config engine of ${model}/${role} ("${e.name}")`, "url");
        }
      }
    }
  }
  const registered = await stub.list(body.model);
  for (const { engine } of registered) {
    if (engine.id !== id && engine.role === body.role && engine.url === url) {
      throw conflict(`url: ${url} is already registered for ${body.model}/${body.role} as "${engine.id}"`, "url");
    }
  }
  if (!replacing && (await stub.get(id))) throw conflict(`name: an engine named "${id}" already exists`, "name");

  const discovered = await discoverEngine({ url, transport: body.transport, model: body.model, ...(body.binding !== undefined ? { binding: body.binding } : {}) }, config.health.timeout_secs, engines);
  const engine: NewRegistryEngine = {
    id,
    model: body.model,
    role: body.role,
    url,
    transport: body.transport,
    labels: body.labels,
    discovered,
  };
  if (body.kv_connector !== undefined) engine.kv_connector = body.kv_connector;
  if (body.kv_engine_id !== undefined) engine.kv_engine_id = body.kv_engine_id;
  if (body.dp_rank !== undefined) engine.dp_rank = body.dp_rank;
  if (body.dp_size !== undefined) engine.dp_size = body.dp_size;
  if (body.bootstrap_port !== undefined) engine.bootstrap_port = body.bootstrap_port;
  if (body.binding !== undefined) engine.binding = body.binding;
  if (body.cluster !== DEFAULT_CLUSTER) engine.cluster = body.cluster;
  return engine;
}
