// A test gateway with the real REGISTRY Durable Object binding (from wrangler.toml, through
// `env` of "cloudflare:workers") and an ADMIN_TOKEN, plus helpers for the admin API, the
// registry stub and the object's alarm.
import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index.js";
import { parseConfig, type LoadedConfig } from "../../src/config/load.js";
import { registryStub, type RegistryStub } from "../../src/routing/registry-client.js";
import { testGateway, type TestGateway } from "./gateway.js";

export const ADMIN_TOKEN = "t";

export interface AdminGateway extends TestGateway {
  /** One admin API call; `token: null` sends no Authorization header. */
  admin(method: string, path: string, body?: unknown, token?: string | null): Promise<Response>;
}

/** `adminToken: null` leaves the ADMIN_TOKEN secret unset (the admin API is then off). */
export function adminGateway(config: unknown, opts: { adminToken?: string | null; registry?: boolean; env?: Record<string, unknown> } = {}): AdminGateway {
  const token = opts.adminToken === undefined ? ADMIN_TOKEN : opts.adminToken;
  const extra: Record<string, unknown> = { ...env, ...opts.env, ADMIN_TOKEN: token ?? undefined };
  if (opts.registry === false) delete extra.REGISTRY;
  const gw = testGateway(config, extra);
  return {
    ...gw,
    admin(method, path, body, callToken = token) {
      const headers: Record<string, string> = {};
      if (callToken !== null) headers.authorization = `Bearer ${callToken}`;
      if (body !== undefined) headers["content-type"] = "application/json";
      return gw.fetch(`http://gateway.test${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
    },
  };
}

export function registry(): RegistryStub {
  if (!env.REGISTRY) throw new Error("wrangler.toml declares no REGISTRY binding");
  return registryStub(env.REGISTRY);
}

/** The loaded config a test's gateway runs with (auth opened as testGateway does). */
export function loaded(config: Record<string, unknown>): LoadedConfig {
  return parseConfig(JSON.stringify({ auth: { data_plane: "open" }, ...config }));
}

export async function alarmAt(stub: RegistryStub = registry()): Promise<number | null> {
  return runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
}

/** Alarms outlive test storage isolation: every test that may arm one deletes it after. */
export async function deleteAlarm(stub: RegistryStub = registry()): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => state.storage.deleteAlarm());
}

/** Removes every registry engine (tests in one file share the object). */
export async function clearRegistry(stub: RegistryStub = registry()): Promise<void> {
  for (const { engine } of await stub.list()) await stub.remove(engine.id);
}

/** Runs the Worker's scheduled handler the way the cron trigger would. */
export async function runCron(config: unknown): Promise<void> {
  const ctx = createExecutionContext();
  const testEnv = { ...env, GATEWAY_CONFIG: JSON.stringify({ auth: { data_plane: "open" }, ...(config as Record<string, unknown>) }) };
  await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), testEnv, ctx);
  await waitOnExecutionContext(ctx);
}
