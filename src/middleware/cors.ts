// CORS for browser clients from a configured origin allowlist. Allows the Connect, gRPC-web
// OpenAI and Anthropic request headers and exposes the ones clients read (grpc-status, grpc-message,
// x-pd-prefill, x-gateway-cluster, x-gateway-error-code).
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { GatewayContext } from "../context.js";

export const CORS_ALLOW_HEADERS = [
  "content-type", "authorization", "connect-protocol-version", "connect-timeout-ms", "connect-accept-encoding",
  "connect-content-encoding", "grpc-timeout", "x-grpc-web", "x-user-agent", "x-model", "x-routing-key", "x-request-id",
  // Anthropic SDKs: the API key, the API version and beta flags.
  "x-api-key", "anthropic-version", "anthropic-beta",
];
export const CORS_EXPOSE_HEADERS = [
  "grpc-status", "grpc-message", "grpc-status-details-bin", "x-pd-prefill", "x-gateway-cluster", "x-gateway-error-code", "connect-content-encoding",
];

export function corsFromConfig(): MiddlewareHandler<{ Variables: { gateway: GatewayContext } }> {
  const handlers = new Map<string, MiddlewareHandler>();
  return async (c, next) => {
    const { allowed_origins, max_age_secs } = c.get("gateway").config.cors;
    if (allowed_origins.length === 0) return next();
    const key = `${allowed_origins.join(" ")}|${max_age_secs}`;
    let handler = handlers.get(key);
    if (!handler) {
      const any = allowed_origins.includes("*");
      handler = cors({
        origin: (origin) => (any || allowed_origins.includes(origin) ? origin : null),
        allowMethods: ["GET", "POST", "OPTIONS"],
        allowHeaders: CORS_ALLOW_HEADERS,
        exposeHeaders: CORS_EXPOSE_HEADERS,
        maxAge: max_age_secs,
      });
      handlers.set(key, handler);
    }
    return handler(c, next);
  };
}
