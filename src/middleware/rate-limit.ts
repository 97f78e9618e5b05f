// Per-key rate limiting through the Workers Rate Limiting binding (RATE_LIMITER), keyed by
// the API key's hash (never the key itself) or, on an open gateway, the client address.
// Without the binding nothing is limited; `wrangler dev` simulates the binding locally.
import type { MiddlewareHandler } from "hono";
import type { GatewayContext } from "../context.js";
import type { Env } from "../env.js";
import { reject } from "./rejection.js";

async function keyId(apiKey: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(apiKey)));
  return "key:" + Array.from(digest.slice(0, 12), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function rateLimit(): MiddlewareHandler<{ Bindings: Env; Variables: { gateway: GatewayContext; apiKey?: string } }> {
  return async (c, next) => {
    const limiter = c.env.RATE_LIMITER;
    if (!limiter) return next();
    const apiKey = c.get("apiKey");
    const key = apiKey ? await keyId(apiKey) : `ip:${c.req.header("cf-connecting-ip") ?? "local"}`;
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
