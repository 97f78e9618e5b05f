// Worker entry: the Hono app serves every request, the cron trigger keeps the registry's
// health checks running, and the registry Durable Object class is exported for its binding.
import { createApp } from "./app.js";
import type { Env } from "./env.js";
import { scheduledHealthChecks } from "./routing/scheduled.js";

export { EngineRegistry } from "./routing/registry-do.js";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  async scheduled(_controller, env, _ctx) {
    await scheduledHealthChecks(env);
  },
} satisfies ExportedHandler<Env>;
