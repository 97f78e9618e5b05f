// Types `env` from "cloudflare:workers" (the bindings wrangler.toml declares) as the Worker's Env.
import type { Env as GatewayEnv } from "../../src/env.js";

declare global {
  namespace Cloudflare {
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type
    interface Env extends GatewayEnv {}
  }
}
export {};
