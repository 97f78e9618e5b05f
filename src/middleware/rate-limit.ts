// Per-key rate limiting through the Workers Rate Limiting binding (RATE_LIMITER), keyed by
// the API key's tag, a hash prefix (never the key itself) or, on an open gateway, the client address.
// Without the binding nothing is limited; `wrangler dev` simulates the binding locally.
import type { MiddlewareHandler } from "hono";
import type { GatewayContext } from "../context.js";
import type { Env } from "../env.js";
import { reject } from "../errors/render.js";

export function rateLimit(): MiddlewareHandler<{ Bindings: Env; Variables: { gateway: GatewayContext; apiKey?: string } }> {
  return async (c, next) => {
    const limiter = c.env.RATE_LIMITER;
    if (!limiter) return next();
    // A key is known by its tag (a hash prefix set by dataPlaneAuth), never by itself.
    const key = c.get("apiKey") ? `key:${c.get("gateway").owner}` : `ip:${c.req.header("cf-connecting-ip") ?? "local"}`;
    let allowed = true;
    try {
      allowed = (await limiter.limit({ key })).success;
    } catch (err) {
      // A limiter outage must not take the data plane down with it.
      console.warn(JSON.stringify({ msg: "rate limiter failed; allowing", error: String(err) }));
    }
    if (!allowed) return reject(c.req.raw, 429, "rate_limited", "rate limit exceeded for this API key", { "retry-after": "60" });
    return next();
  };
}
