// Request limits checked before any surface parses a body: the header block size and a
// declared body length over the configured maxima. (Bodies without a length are capped
// where they are read: Connect's readMaxBytes and the OpenAI body reader.)
import type { MiddlewareHandler } from "hono";
import type { GatewayContext } from "../context.js";
import { reject } from "../errors/render.js";

export function headerBytes(headers: Headers): number {
  let n = 0;
  headers.forEach((value, name) => (n += name.length + value.length + 4));
  return n;
}

export function requestLimits(): MiddlewareHandler<{ Variables: { gateway: GatewayContext } }> {
  return async (c, next) => {
    const { limits } = c.get("gateway").config;
    if (headerBytes(c.req.raw.headers) > limits.max_header_bytes) {
      return reject(c.req.raw, 431, "headers_too_large", `request headers: larger than ${limits.max_header_bytes} bytes`);
    }
    const declared = Number(c.req.header("content-length") ?? "0");
    if (Number.isFinite(declared) && declared > limits.max_body_bytes) {
      return reject(c.req.raw, 413, "body_too_large", `body: ${declared} bytes is above the limit of ${limits.max_body_bytes}`);
    }
    return next();
  };
}
