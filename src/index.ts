// Worker entry: the Hono app serves every request, the cron trigger keeps the registry's
// health checks running, and the Durable Object classes (the engine registry, the Responses
// API's stored responses) are exported for their bindings.
import { createApp } from "./app.js";
import type { Env } from "./env.js";
import { scheduledHealthChecks } from "./routing/scheduled.js";

export { EngineRegistry } from "./routing/registry-do.js";
export { ResponseStore } from "./conversations/response-store-do.js";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  async scheduled(_controller, env, _ctx) {
    await scheduledHealthChecks(env);
  },
} satisfies ExportedHandler<Env>;
