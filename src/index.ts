// Worker entry: the Hono app serves every request.
import { createApp } from "./app.js";
import type { Env } from "./env.js";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
